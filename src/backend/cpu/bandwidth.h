// Memory read bandwidth probe: the roofline that decode speed is judged
// against (decode streams every weight once per token).
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace tessera::cpu {

// STREAM-like read test: every thread of `pool` sums its contiguous share of a
// `bytes`-sized buffer with the best SIMD path (Kernels::sum_f32). The buffer
// is first written by the same threads so its pages are resident and local.
// Returns the best of `repeats` passes in bytes per second.
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{1} << 30, int repeats = 5);

}  // namespace tessera::cpu
