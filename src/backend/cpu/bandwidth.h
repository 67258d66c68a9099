// Memory read bandwidth probe: the roofline that decode speed is judged
// against (decode streams every weight once per token).
#pragma once

#include <cstddef>
#include <memory>

#include "core/thread_pool.h"

namespace tessera::cpu {

// STREAM-like read test over a buffer it owns: every thread of `pool` sums
// its contiguous share with the best SIMD path (Kernels::sum_f32), as 1, 2
// and 4 interleaved streams per thread. Which stream count reads fastest
// depends on the CPU's prefetchers and, on a shared VM, changes from minute
// to minute, so measure() reports the best of all of them: the highest read
// rate the machine showed, which is what a decode kernel is held to.
// Not thread-safe; the pool must outlive the probe.
class BandwidthProbe {
 public:
  // Allocates `bytes` (rounded down to whole floats) and writes it from the
  // pool's threads so its pages are resident and local. bytes should exceed
  // the last-level cache several times over.
  BandwidthProbe(ThreadPool& pool, size_t bytes = size_t{1} << 30);
  // Bytes per second: the best of `repeats` passes for each stream count
  // (0 when the buffer is empty or repeats <= 0).
  double measure(int repeats = 3);

 private:
  double pass(int streams);

  ThreadPool& pool_;
  int64_t n_;  // floats
  std::unique_ptr<float[]> buf_;
};

// BandwidthProbe(pool, bytes).measure(repeats).
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{1} << 30, int repeats = 3);

}  // namespace tessera::cpu
