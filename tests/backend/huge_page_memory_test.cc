#include "backend/cpu/huge_page_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace tessera::cpu {
namespace {

constexpr uintptr_t kTwoMiB = uintptr_t{2} << 20;

// allocate() maps zeroed, writable, 2 MiB-aligned memory of the size asked;
// zero bytes give an empty one.
TEST(HugePageMemory, AllocateMapsZeroedAlignedMemory) {
  const size_t bytes = (size_t{3} << 20) + 5;
  auto m = HugePageMemory::allocate(bytes);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_NE(m->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data()) % kTwoMiB, 0u);
  EXPECT_EQ(m->size(), bytes);
  EXPECT_EQ(m->data()[0], 0);
  EXPECT_EQ(m->data()[bytes - 1], 0);
  m->data()[bytes - 1] = 42;  // the last byte is mapped and writable
  HugePageMemory moved = std::move(m).value();
  EXPECT_EQ(moved.data()[bytes - 1], 42);

  auto empty = HugePageMemory::allocate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->data(), nullptr);
  EXPECT_EQ(empty->size(), 0u);
}

// A size no mapping can have is an error, not an abort: 2^62 bytes is past
// the 47-bit user address space, SIZE_MAX past any page rounding.
TEST(HugePageMemory, ImpossibleSizeIsResourceExhausted) {
  for (const size_t bytes : {size_t{1} << 62, SIZE_MAX, SIZE_MAX - 4096}) {
    auto m = HugePageMemory::allocate(bytes);
    ASSERT_FALSE(m.ok()) << bytes;
    EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << bytes;
  }
}

}  // namespace
}  // namespace tessera::cpu
