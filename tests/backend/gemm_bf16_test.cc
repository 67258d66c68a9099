// The AVX512-BF16 tile (gemm.h pack_bf16 / tile_bf16_dp) against its scalar
// reference (gemm_bf16_ref.h) bit for bit, for every tile shape and the
// decode form, and against the f32-activation product within the bf16
// rounding of the activations. Skips on CPUs without avx512_bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_bf16_ref.h"
#include "backend/cpu/kernels.h"
#include "core/dtype.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

using testing::random_floats;

// 64-byte aligned storage for packed rows.
struct alignas(64) Vec32 {
  uint16_t v[32];
};

const GemmKernels* bf16_set() {
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g != nullptr && g->tile_bf16_dp != nullptr) return g;
  }
  return nullptr;
}

TEST(GemmBf16, PackMatchesReferenceRounding) {
  const GemmKernels* g = bf16_set();
  if (g == nullptr) GTEST_SKIP() << "no avx512_bf16 on this CPU";
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 100, 2048}) {
    std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), 4.0f);
    // Ties, subnormals, huge values, signed zero and NaN at the front.
    const float special[] = {1.00390625f, 1.01171875f, 1e-40f, -1e-39f, 3e38f, -0.0f, std::nanf("")};
    for (size_t i = 0; i < std::size(special) && i < x.size(); ++i) x[i] = special[i];
    const int64_t elems = packed_bf16_row_elems(n);
    std::vector<Vec32> got(static_cast<size_t>(elems / 32));
    std::vector<uint16_t> want(static_cast<size_t>(elems));
    std::memset(got.data(), 0xab, got.size() * sizeof(Vec32));
    g->pack_bf16(x.data(), got.data()->v, n);
    pack_bf16_ref(x.data(), want.data(), n);
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(uint16_t))) << "n=" << n;
  }
}

TEST(GemmBf16, TileMatchesReferenceBitsInEveryShape) {
  const GemmKernels* g = bf16_set();
  if (g == nullptr) GTEST_SKIP() << "no avx512_bf16 on this CPU";
  const int max_r = g->float_rows, max_t = g->float_tokens;
  const int64_t rows = 2 * max_r + 1, tokens = 2 * max_t + 1;
  for (int64_t n : {1, 15, 32, 33, 100, 2048, 2080}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const int64_t elems = packed_bf16_row_elems(n);
    std::vector<uint16_t> w(static_cast<size_t>(rows * n));  // [rows, n] bf16
    const std::vector<float> wf = random_floats(rows * n, static_cast<uint32_t>(n) + 7);
    for (size_t i = 0; i < w.size(); ++i) w[i] = fp32_to_bf16(wf[i]);
    const std::vector<float> x = random_floats(tokens * n, static_cast<uint32_t>(n) + 99, 2.0f);  // [tokens, n]
    std::vector<Vec32> xp(static_cast<size_t>(tokens * elems / 32));                              // [tokens, elems]
    for (int64_t t = 0; t < tokens; ++t) g->pack_bf16(x.data() + t * n, xp.data()->v + t * elems, n);
    const uint16_t* xq = xp.data()->v;
    const auto ws = static_cast<int64_t>(n * sizeof(uint16_t));
    const auto xs = static_cast<int64_t>(elems * sizeof(uint16_t));
    std::vector<float> want(static_cast<size_t>(tokens * rows));  // [tokens, rows]
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t r = 0; r < rows; ++r) {
        const float y = dot_bf16_dp_ref(w.data() + r * n, xq + t * elems, n);
        want[static_cast<size_t>(t * rows + r)] = y;
        // Against the f32 activations: the bf16 rounding of x (relative
        // 2^-9 per element) bounds the difference.
        double dot = 0, mag = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double prod =
              static_cast<double>(bf16_to_fp32(w[static_cast<size_t>(r * n + i)])) * x[static_cast<size_t>(t * n + i)];
          dot += prod;
          mag += std::fabs(prod);
        }
        ASSERT_NEAR(y, dot, 0x1p-8 * mag + 1e-30) << "r=" << r << " t=" << t;
      }
    }
    for (int tr = 1; tr <= max_r; ++tr) {
      for (int tt = 1; tt <= max_t; ++tt) {
        std::vector<float> y(want.size(), std::nanf(""));
        for (int64_t t0 = 0; t0 < tokens; t0 += tt) {
          for (int64_t r0 = 0; r0 < rows; r0 += tr) {
            const int nr = static_cast<int>(std::min<int64_t>(tr, rows - r0));
            const int nt = static_cast<int>(std::min<int64_t>(tt, tokens - t0));
            g->tile_bf16_dp(w.data() + r0 * n, ws, nr, xq + t0 * elems, xs, nt, n, y.data() + t0 * rows + r0, rows);
          }
        }
        ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "tile " << tr << "x" << tt;
      }
    }
    // Decode form (matmul's decode_streams): one token, rows two apart.
    for (int tr = 2; tr <= max_r; ++tr) {
      std::vector<float> out(static_cast<size_t>(tr));
      g->tile_bf16_dp(w.data(), 2 * ws, tr, xq, xs, 1, n, out.data(), 1);
      for (int s = 0; s < tr; ++s) {
        ASSERT_EQ(0, std::memcmp(&out[static_cast<size_t>(s)], &want[static_cast<size_t>(2 * s)], sizeof(float)))
            << "rows two apart, tile " << tr;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
