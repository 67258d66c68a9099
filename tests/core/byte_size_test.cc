#include "tessera/byte_size.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(ByteSize, ParsesUnits) {
  EXPECT_EQ(parse_byte_size("64MiB").value(), 64ull << 20);
  EXPECT_EQ(parse_byte_size("2GiB").value(), 2ull << 30);
  EXPECT_EQ(parse_byte_size("2gb").value(), 2ull << 30);
  EXPECT_EQ(parse_byte_size("512k").value(), 512ull << 10);
  EXPECT_EQ(parse_byte_size("1000").value(), 1000ull);
  EXPECT_EQ(parse_byte_size("1.5M").value(), 3ull << 19);
}

TEST(ByteSize, RejectsGarbage) {
  EXPECT_FALSE(parse_byte_size("").ok());
  EXPECT_FALSE(parse_byte_size("-5M").ok());
  EXPECT_FALSE(parse_byte_size("12XB").ok());
  EXPECT_FALSE(parse_byte_size("abc").ok());
  EXPECT_FALSE(parse_byte_size("99999999999TiB").ok());
}

TEST(ByteSize, Formats) {
  EXPECT_EQ(format_byte_size(512), "512 B");
  EXPECT_EQ(format_byte_size(3ull << 19), "1.50 MiB");
}

}  // namespace
}  // namespace tessera
