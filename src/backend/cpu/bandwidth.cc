#include "backend/cpu/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "backend/cpu/kernels.h"

namespace tessera::cpu {

namespace {

constexpr int64_t kPiece = 1024;  // floats per visit of a stream (4 KiB)
constexpr int kStreamCounts[] = {1, 2, 4};

// Thread i's share [b, e) of n floats, on 16-float (64-byte) boundaries so
// threads do not share lines.
void chunk(int64_t n, int i, int nt, int64_t* b, int64_t* e) {
  const int64_t lines = (n + 15) / 16;
  *b = std::min(n, lines * i / nt * 16);
  *e = std::min(n, lines * (i + 1) / nt * 16);
}

}  // namespace

BandwidthProbe::BandwidthProbe(ThreadPool& pool, size_t bytes)
    : pool_(pool),
      n_(static_cast<int64_t>(bytes / sizeof(float))),
      // Uninitialised on purpose: the parallel fill below is the first touch.
      buf_(n_ > 0 ? new float[static_cast<size_t>(n_)] : nullptr) {
  if (n_ <= 0) return;
  pool_.run([&](int i, int nt) {
    int64_t b, e;
    chunk(n_, i, nt, &b, &e);
    std::fill(buf_.get() + b, buf_.get() + e, 1.0f);
  });
}

double BandwidthProbe::pass(int streams) {
  const Kernels& k = kernels();
  std::vector<float> sums(static_cast<size_t>(pool_.size()));
  const auto t0 = std::chrono::steady_clock::now();
  pool_.run([&](int i, int nt) {
    int64_t b, e;
    chunk(n_, i, nt, &b, &e);
    // `streams` interleaved sequential streams per thread, 4 KiB at a time.
    const int64_t len = (e - b) / streams / kPiece * kPiece;
    float acc = 0.0f;
    for (int64_t off = 0; off < len; off += kPiece) {
      for (int64_t s = 0; s < streams; ++s) acc += k.sum_f32(buf_.get() + b + s * len + off, kPiece);
    }
    const int64_t done = streams * len;  // the remainder is one stream
    acc += k.sum_f32(buf_.get() + b + done, e - b - done);
    // Stored so the compiler cannot drop the read loop.
    sums[static_cast<size_t>(i)] = acc;
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  volatile float sink = sums[0];
  (void)sink;
  return s > 0 ? static_cast<double>(n_) * sizeof(float) / s : 0.0;
}

double BandwidthProbe::measure(int repeats) {
  double best = 0.0;
  if (n_ <= 0) return best;
  for (int rep = 0; rep < repeats; ++rep) {
    for (int streams : kStreamCounts) best = std::max(best, pass(streams));
  }
  return best;
}

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int repeats) {
  return BandwidthProbe(pool, bytes).measure(repeats);
}

}  // namespace tessera::cpu
