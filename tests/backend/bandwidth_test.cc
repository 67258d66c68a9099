#include "backend/cpu/bandwidth.h"

#include <gtest/gtest.h>

namespace tessera::cpu {
namespace {

// Only sanity: a small buffer gives a positive, finite figure.
TEST(Bandwidth, ReturnsPositiveRate) {
  ThreadPool pool(2);
  const double bw = measure_read_bandwidth(pool, size_t{4} << 20, 2);
  EXPECT_GT(bw, 1e8);
  EXPECT_LT(bw, 1e14);
}

}  // namespace
}  // namespace tessera::cpu
