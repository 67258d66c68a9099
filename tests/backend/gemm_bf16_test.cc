// The AVX512-BF16 tile (gemm.h pack_bf16 / tile_bf16_dp) over bf16 panels
// (weight_layout.h) against its scalar reference (gemm_bf16_ref.h) bit for
// bit, for every tile shape and the decode form, and against the
// f32-activation product within the bf16 rounding of the activations; the
// panel repack against its inverse. Skips on CPUs without avx512_bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_bf16_ref.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/weight_layout.h"
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

TEST(GemmBf16, PanelRepackIsALosslessPermutation) {
  const int64_t rows = 48, cols = 70;
  std::vector<uint16_t> w(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint16_t>(i * 7919u);
  std::vector<uint16_t> panels(w.size()), back(w.size());
  repack_rows_bf16_panel(w.data(), panels.data(), rows, cols);
  // Row 17 = row 1 of panel 1; column 5 = the odd half of pair 2.
  EXPECT_EQ(panels[static_cast<size_t>(16 * cols + 2 * 32 + 2 * 1 + 1)], w[static_cast<size_t>(17 * cols + 5)]);
  unpack_rows_bf16_panel(panels.data(), back.data(), rows, cols);
  EXPECT_EQ(back, w);
  EXPECT_FALSE(fits_bf16_panels(32, 63));
  EXPECT_TRUE(fits_bf16_panels(32, 64));
  // A last panel of 7 rows: row 16 + 3, column 9 at pair 4 of 7 rows.
  const int64_t odd_rows = 23;
  std::vector<uint16_t> w2(static_cast<size_t>(odd_rows * cols)), p2(w2.size()), b2(w2.size());
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = static_cast<uint16_t>(i * 31u + 1u);
  repack_rows_bf16_panel(w2.data(), p2.data(), odd_rows, cols);
  EXPECT_EQ(p2[static_cast<size_t>(16 * cols + 4 * 14 + 2 * 3 + 1)], w2[static_cast<size_t>(19 * cols + 9)]);
  unpack_rows_bf16_panel(p2.data(), b2.data(), odd_rows, cols);
  EXPECT_EQ(b2, w2);
}

TEST(GemmBf16, TileMatchesReferenceBitsInEveryShape) {
  const GemmKernels* g = bf16_set();
  if (g == nullptr) GTEST_SKIP() << "no avx512_bf16 on this CPU";
  const int max_p = g->bf16_panels, max_t = g->bf16_tokens;
  const int64_t panels = 2 * max_p + 1, rows = panels * kBf16PanelRows, tokens = 2 * max_t + 1;
  for (int64_t n : {2, 16, 32, 34, 100, 2048, 2080}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const int64_t elems = packed_bf16_row_elems(n);
    std::vector<uint16_t> w(static_cast<size_t>(rows * n));  // [rows, n] bf16
    const std::vector<float> wf = random_floats(rows * n, static_cast<uint32_t>(n) + 7);
    for (size_t i = 0; i < w.size(); ++i) w[i] = fp32_to_bf16(wf[i]);
    std::vector<uint16_t> wp(w.size());  // the same rows as bf16 panels
    repack_rows_bf16_panel(w.data(), wp.data(), rows, n);
    const std::vector<float> x = random_floats(tokens * n, static_cast<uint32_t>(n) + 99, 2.0f);  // [tokens, n]
    std::vector<Vec32> xp(static_cast<size_t>(tokens * elems / 32));                              // [tokens, elems]
    for (int64_t t = 0; t < tokens; ++t) g->pack_bf16(x.data() + t * n, xp.data()->v + t * elems, n);
    const uint16_t* xq = xp.data()->v;
    const auto ps = static_cast<int64_t>(kBf16PanelRows * n * sizeof(uint16_t));  // bytes per panel
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
    for (int tp = 1; tp <= max_p; ++tp) {
      for (int tt = 1; tt <= max_t; ++tt) {
        std::vector<float> y(want.size(), std::nanf(""));
        for (int64_t t0 = 0; t0 < tokens; t0 += tt) {
          for (int64_t p0 = 0; p0 < panels; p0 += tp) {
            const int np = static_cast<int>(std::min<int64_t>(tp, panels - p0));
            const int nt = static_cast<int>(std::min<int64_t>(tt, tokens - t0));
            g->tile_bf16_dp(wp.data() + p0 * kBf16PanelRows * n, ps, np, xq + t0 * elems, xs, nt, n,
                            y.data() + t0 * rows + p0 * kBf16PanelRows, rows, kBf16PanelRows);
          }
        }
        ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "tile " << tp << "x" << tt;
      }
    }
    // A last panel of h < 16 rows (tile_bf16_dp_part), every token count.
    for (int h : {1, 5, 15}) {
      const int64_t part_rows = kBf16PanelRows + h;  // one full panel, then the partial one
      std::vector<uint16_t> wpart(static_cast<size_t>(part_rows * n));
      repack_rows_bf16_panel(w.data(), wpart.data(), part_rows, n);
      for (int tt = 1; tt <= max_t; ++tt) {
        std::vector<float> y(static_cast<size_t>(tt * kBf16PanelRows), std::nanf(""));  // [tt, 16]
        g->tile_bf16_dp_part(wpart.data() + kBf16PanelRows * n, h, xq, xs, tt, n, y.data(), kBf16PanelRows);
        for (int t = 0; t < tt; ++t) {
          for (int j = 0; j < kBf16PanelRows; ++j) {
            const float got = y[static_cast<size_t>(t * kBf16PanelRows + j)];
            if (j >= h) {
              ASSERT_TRUE(std::isnan(got)) << "wrote past the panel's rows: h=" << h << " row " << j;
              continue;
            }
            const float ref = want[static_cast<size_t>(t * rows + kBf16PanelRows + j)];
            ASSERT_EQ(0, std::memcmp(&got, &ref, sizeof(float))) << "h=" << h << " tokens=" << tt << " t=" << t;
          }
        }
      }
    }
    // Decode form (matmul's panel streams): one token, panels two apart.
    for (int tp = 2; tp <= max_p; ++tp) {
      std::vector<float> out(static_cast<size_t>(tp * kBf16PanelRows));
      g->tile_bf16_dp(wp.data(), 2 * ps, tp, xq, xs, 1, n, out.data(), 0, kBf16PanelRows);
      for (int s = 0; s < tp; ++s) {
        ASSERT_EQ(0, std::memcmp(&out[static_cast<size_t>(s * kBf16PanelRows)],
                                 &want[static_cast<size_t>(2 * s * kBf16PanelRows)], kBf16PanelRows * sizeof(float)))
            << "panels two apart, tile " << tp;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
