#include "backend/cpu/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/kernels.h"

namespace tessera::cpu {

namespace {
constexpr int64_t kStreams = 4;
constexpr int64_t kPiece = 1024;  // floats per visit of a stream (4 KiB)
}  // namespace

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int repeats) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  if (n <= 0 || repeats <= 0) return 0.0;
  // Uninitialised on purpose: the parallel fill below is the first touch.
  std::unique_ptr<float[]> buf(new float[static_cast<size_t>(n)]);
  const Kernels& k = kernels();
  auto chunk = [&](int i, int nt, int64_t* b, int64_t* e) {
    // 16-float (64-byte) aligned boundaries so threads do not share lines.
    const int64_t lines = (n + 15) / 16;
    *b = std::min(n, lines * i / nt * 16);
    *e = std::min(n, lines * (i + 1) / nt * 16);
  };
  pool.run([&](int i, int nt) {
    int64_t b, e;
    chunk(i, nt, &b, &e);
    std::fill(buf.get() + b, buf.get() + e, 1.0f);
  });

  std::vector<float> sums(static_cast<size_t>(pool.size()));
  double best = 0.0;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int i, int nt) {
      int64_t b, e;
      chunk(i, nt, &b, &e);
      // Several interleaved streams per thread: one stream per core leaves
      // the hardware prefetchers short of memory-level parallelism, and the
      // matmul kernels read several weight rows at once, so a single-stream
      // figure would understate the roofline they are held to.
      const int64_t len = (e - b) / kStreams / kPiece * kPiece;
      float acc = 0.0f;
      for (int64_t off = 0; off < len; off += kPiece) {
        for (int64_t s = 0; s < kStreams; ++s) acc += k.sum_f32(buf.get() + b + s * len + off, kPiece);
      }
      const int64_t done = kStreams * len;  // the remainder is one stream
      acc += k.sum_f32(buf.get() + b + done, e - b - done);
      // Stored so the compiler cannot drop the read loop.
      sums[static_cast<size_t>(i)] = acc;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, static_cast<double>(n) * sizeof(float) / s);
  }
  volatile float sink = sums[0];
  (void)sink;
  return best;
}

}  // namespace tessera::cpu
