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

// The probe object measures again over the same buffer; an empty buffer or
// no passes gives 0 rather than a division by zero.
TEST(Bandwidth, ProbeRepeatsAndEdgeCases) {
  ThreadPool pool(2);
  BandwidthProbe probe(pool, size_t{4} << 20);
  for (int i = 0; i < 2; ++i) {
    const double bw = probe.measure(1);
    EXPECT_GT(bw, 1e8);
    EXPECT_LT(bw, 1e14);
  }
  EXPECT_EQ(probe.measure(0), 0.0);
  BandwidthProbe empty(pool, 0);
  EXPECT_EQ(empty.measure(), 0.0);
}

}  // namespace
}  // namespace tessera::cpu
