// F16 weights as int16 panels (weight_layout.h; gemm.h quantize_i16 /
// tile_i16: the AVX2 tables, 8-row panels, and the AVX-512 table, 16-row
// panels): the group quantization on hand-worked cases, the packing and the
// tile against their scalar references (gemm_i16_ref.h) bit for bit in every
// tile shape and the decode form, the tile against the f32 product within
// the stated quantization bound, and the tables against each other. Skips
// where no table has tile_i16 (scalar-only CPUs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_i16_ref.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/weight_layout.h"
#include "core/dtype.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

using testing::isa_label;
using testing::random_floats;

// Every table with tile_i16 this CPU runs, labelled: one per ISA, and on
// CPUs with AVX-512 VNNI the AVX-VNNI code with EVEX vpdpwssd
// (avx_vnni_kernels_as_evex) too, where the real AVX-VNNI table cannot run.
std::vector<std::pair<std::string, const GemmKernels*>> i16_tables() {
  std::vector<std::pair<std::string, const GemmKernels*>> out;
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g != nullptr && g->tile_i16 != nullptr) out.emplace_back(isa_label(isa), g);
  }
  if (cpu_features().avx512_vnni && !cpu_features().avx_vnni) {
    out.emplace_back("avxvnni as evex", avx_vnni_kernels_as_evex().gemm);
  }
  return out;
}

TEST(GemmI16, QuantizeGroupHandWorkedCases) {
  float v[kI16GroupCols] = {};
  int16_t q[kI16GroupCols];
  // max |v| = 2047: the scale is 1 and integers stay exact; halves round to even.
  v[0] = -2047.0f;
  v[1] = 2.5f;
  v[2] = 3.5f;
  v[3] = -0.5f;
  v[4] = 1000.0f;
  EXPECT_EQ(quantize_i16_group(v, q, kI16WeightMax), 1.0f);
  EXPECT_EQ(q[0], -2047);
  EXPECT_EQ(q[1], 2);
  EXPECT_EQ(q[2], 4);
  EXPECT_EQ(q[3], 0);
  EXPECT_EQ(q[4], 1000);
  EXPECT_EQ(q[5], 0);
  // max 1.0 against qmax 16383: d = 1/16383, 0.25 * 16383 = 4095.75 -> 4096.
  std::fill(std::begin(v), std::end(v), 0.0f);
  v[7] = 1.0f;
  v[8] = 0.25f;
  v[9] = -1.0f;
  EXPECT_EQ(quantize_i16_group(v, q, kI16ActMax), 1.0f / 16383.0f);
  EXPECT_EQ(q[7], 16383);
  EXPECT_EQ(q[8], 4096);
  EXPECT_EQ(q[9], -16383);
  // All zero, and so small that qmax / m overflows: scale 0, quants 0.
  std::fill(std::begin(v), std::end(v), 0.0f);
  EXPECT_EQ(quantize_i16_group(v, q, kI16ActMax), 0.0f);
  v[3] = 1e-38f;
  v[4] = -1e-40f;
  EXPECT_EQ(quantize_i16_group(v, q, kI16ActMax), 0.0f);
  for (int16_t e : q) ASSERT_EQ(e, 0);
  // Inf or NaN anywhere: scale NaN, quants 0.
  for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    std::fill(std::begin(v), std::end(v), 1.0f);
    v[63] = bad;
    EXPECT_TRUE(std::isnan(quantize_i16_group(v, q, kI16WeightMax)));
    for (int16_t e : q) ASSERT_EQ(e, 0);
  }
}

// x[n] as a packed activation row (pack_i16_ref's layout) through g.
void pack(const GemmKernels& g, const float* x, uint8_t* out, int64_t n) {
  g.quantize_i16(x, reinterpret_cast<int16_t*>(out), reinterpret_cast<float*>(out + 2 * n), n, kI16ActMax);
}

TEST(GemmI16, PackMatchesReference) {
  const auto tables = i16_tables();
  if (tables.empty()) GTEST_SKIP() << "no table with tile_i16 on this CPU";
  for (const auto& [label, table] : tables) {
    SCOPED_TRACE(label);
    const GemmKernels& g = *table;
    for (int64_t n : {64, 128, 640, 2048}) {
      std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), 3.0f);
      // Group 1: a zero group; group 2 (if any): a NaN; group 3: ties at
      // the scale (max 16383 makes inv 1); group 4: a group so small that
      // qmax / max overflows; group 5: an Inf; group 6: a subnormal among
      // normal values.
      if (n >= 128) std::fill(x.begin() + 64, x.begin() + 128, 0.0f);
      if (n >= 192) x[150] = std::nanf("");
      if (n >= 256) {
        for (int i = 0; i < 64; ++i) x[static_cast<size_t>(192 + i)] = static_cast<float>(i) + 0.5f;
        x[192] = 16383.0f;
      }
      if (n >= 320) {
        for (int i = 0; i < 64; ++i) x[static_cast<size_t>(256 + i)] = (i % 2 == 0 ? 1e-36f : -3e-37f) * (i + 1);
      }
      if (n >= 384) x[330] = -std::numeric_limits<float>::infinity();
      if (n >= 448) x[400] = -1e-39f;
      const auto bytes = static_cast<size_t>(packed_i16_row_bytes(n));
      std::vector<uint8_t> got(bytes, 0xab), want(bytes, 0xcd);
      pack(g, x.data(), got.data(), n);
      pack_i16_ref(x.data(), want.data(), n);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), bytes)) << "n=" << n;
      // The weights' range: each group as quantize_i16_group(·, ·, 2047).
      std::vector<int16_t> q(static_cast<size_t>(n)), want_q(q.size());
      std::vector<float> d(static_cast<size_t>(n / 64)), want_d(d.size());
      g.quantize_i16(x.data(), q.data(), d.data(), n, kI16WeightMax);
      for (int64_t gi = 0; gi < n / 64; ++gi) {
        want_d[static_cast<size_t>(gi)] =
            quantize_i16_group(x.data() + gi * 64, want_q.data() + gi * 64, kI16WeightMax);
      }
      ASSERT_EQ(q, want_q) << "n=" << n;
      ASSERT_EQ(0, std::memcmp(d.data(), want_d.data(), d.size() * sizeof(float))) << "n=" << n;
    }
  }
}

// F16 and BF16 rows (BF16 also beyond f16's range: the scale is computed in
// f32 either way) land at their panel places, each group as
// quantize_i16_group of the exact f32 values; every table's widen and
// quantize_i16 give the scalar form's bits.
TEST(GemmI16, PanelRepackPlacesQuantsAndScales) {
  const int64_t rows = 32, cols = 192;
  const std::vector<float> wf = random_floats(rows * cols, 5, 0.5f);
  for (DType t : {DType::kF16, DType::kBF16}) {
    std::vector<uint16_t> w(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < w.size(); ++i) {
      // BF16: every fourth row scaled by 2^40, every fifth by 2^-40.
      const int64_t r = static_cast<int64_t>(i) / cols;
      const float big = r % 4 == 1 ? 0x1p40f : r % 5 == 2 ? 0x1p-40f : 1.0f;
      w[i] = t == DType::kF16 ? fp32_to_fp16(wf[i]) : fp32_to_bf16(wf[i] * big);
    }
    const auto value = [&](size_t i) { return t == DType::kF16 ? fp16_to_fp32(w[i]) : bf16_to_fp32(w[i]); };
    for (int pr : {8, 16}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " panel rows " + std::to_string(pr));
      std::vector<int16_t> q(w.size());
      std::vector<float> d(static_cast<size_t>(rows * cols / kI16GroupCols));
      repack_rows_as_i16_panel(t, w.data(), q.data(), d.data(), rows, cols, pr);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t g = 0; g < cols / kI16GroupCols; ++g) {
          float v[kI16GroupCols];
          int16_t want[kI16GroupCols];
          for (int i = 0; i < kI16GroupCols; ++i) v[i] = value(static_cast<size_t>(r * cols + g * 64 + i));
          const float want_d = quantize_i16_group(v, want, kI16WeightMax);
          ASSERT_GT(want_d, 0.0f);
          // Row r is row r % R of panel r / R; scales [panel][group][R].
          ASSERT_EQ(d[static_cast<size_t>((r / pr * (cols / 64) + g) * pr + r % pr)], want_d) << r << " " << g;
          for (int i = 0; i < kI16GroupCols; ++i) {
            const int64_t c = g * 64 + i;
            ASSERT_EQ(q[static_cast<size_t>(r / pr * pr * cols + c / 2 * 2 * pr + 2 * (r % pr) + c % 2)], want[i]);
          }
        }
      }
      // Through each table of this panel height (its quantize_i16 and, where
      // it has them, widen_f16 / widen_bf16): the same bits.
      for (const auto& [label, table] : i16_tables()) {
        const GemmKernels& g = *table;
        if (g.i16_panel_rows != pr) continue;
        SCOPED_TRACE(label);
        std::vector<int16_t> q2(q.size(), -1);
        std::vector<float> d2(d.size(), -1.0f);
        repack_rows_as_i16_panel(t, w.data(), q2.data(), d2.data(), rows, cols, pr, &g);
        EXPECT_EQ(q2, q);
        EXPECT_EQ(0, std::memcmp(d2.data(), d.data(), d.size() * sizeof(float)));
      }
    }
  }
  EXPECT_FALSE(fits_i16_panels(12, 128, 8));
  EXPECT_FALSE(fits_i16_panels(16, 96, 8));
  EXPECT_FALSE(fits_i16_panels(24, 128, 16));
  EXPECT_TRUE(fits_i16_panels(16, 128, 8));
  EXPECT_TRUE(fits_i16_panels(32, 128, 16));
}

// rows × n F16 weights as panels, tokens × n activations packed, and the
// reference result of every element.
struct Problem {
  int64_t rows, tokens, n;
  std::vector<uint16_t> w;       // [rows, n] f16
  std::vector<float> x;          // [tokens, n]
  std::vector<int16_t> wq;       // panels
  std::vector<float> wd;         // [rows / 8][n / 64][8]
  std::vector<int16_t> wq_rows;  // [rows, n], row-major (for dot_i16_ref)
  std::vector<float> wd_rows;    // [rows, n / 64]
};

Problem make_problem(int64_t rows, int64_t tokens, int64_t n, uint32_t seed, int panel_rows) {
  Problem p{rows, tokens, n, {}, {}, {}, {}, {}, {}};
  const std::vector<float> wf = random_floats(rows * n, seed, 0.2f);
  p.w.resize(wf.size());
  for (size_t i = 0; i < wf.size(); ++i) p.w[i] = fp32_to_fp16(wf[i]);
  p.x = random_floats(tokens * n, seed + 1, 2.0f);
  p.wq.resize(p.w.size());
  p.wd.resize(static_cast<size_t>(rows * n / kI16GroupCols));
  repack_rows_as_i16_panel(DType::kF16, p.w.data(), p.wq.data(), p.wd.data(), rows, n, panel_rows);
  p.wq_rows.resize(p.w.size());
  p.wd_rows.resize(p.wd.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < n / kI16GroupCols; ++g) {
      float v[kI16GroupCols];
      for (int i = 0; i < kI16GroupCols; ++i) v[i] = fp16_to_fp32(p.w[static_cast<size_t>(r * n + g * 64 + i)]);
      p.wd_rows[static_cast<size_t>(r * (n / 64) + g)] =
          quantize_i16_group(v, p.wq_rows.data() + r * n + g * 64, kI16WeightMax);
    }
  }
  return p;
}

TEST(GemmI16, TileMatchesReferenceBitsInEveryShapeAndTheF32ProductWithinTheBound) {
  const auto tables = i16_tables();
  if (tables.empty()) GTEST_SKIP() << "no table with tile_i16 on this CPU";
  for (const auto& [label, table] : tables) {
    SCOPED_TRACE(label);
    const GemmKernels& g = *table;
    const int pr = g.i16_panel_rows;
    const int64_t panels = 2 * g.i16_stream_panels + 1, rows = panels * pr;
    const int64_t tokens = 2 * g.i16_tokens + 1;
    for (int64_t n : {64, 192, 2048}) {
      SCOPED_TRACE("n=" + std::to_string(n));
      const Problem p = make_problem(rows, tokens, n, static_cast<uint32_t>(n) + 3, pr);
      const auto xs = (packed_i16_row_bytes(n) + 63) / 64 * 64;
      std::vector<uint8_t> xp(static_cast<size_t>(tokens * xs));
      for (int64_t t = 0; t < tokens; ++t) pack(g, p.x.data() + t * n, xp.data() + t * xs, n);
      std::vector<float> want(static_cast<size_t>(tokens * rows));  // [tokens, rows]
      for (int64_t t = 0; t < tokens; ++t) {
        const auto* xq = reinterpret_cast<const int16_t*>(xp.data() + t * xs);
        const auto* xd = reinterpret_cast<const float*>(xp.data() + t * xs + 2 * n);
        for (int64_t r = 0; r < rows; ++r) {
          const float y = dot_i16_ref(p.wq_rows.data() + r * n, p.wd_rows.data() + r * (n / 64), xp.data() + t * xs, n);
          want[static_cast<size_t>(t * rows + r)] = y;
          // Against the f32 product of the f16 weights: each weight is off by
          // at most d_w / 2, each activation by d_x / 2 (round to nearest),
          // plus the float rounding of the group steps.
          double dot = 0, bound = 0, mag = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double wv = fp16_to_fp32(p.w[static_cast<size_t>(r * n + i)]);
            const double xv = p.x[static_cast<size_t>(t * n + i)];
            const double dw = p.wd_rows[static_cast<size_t>(r * (n / 64) + i / 64)], dx = xd[i / 64];
            dot += wv * xv;
            mag += std::fabs(static_cast<double>(p.wq_rows[static_cast<size_t>(r * n + i)]) * xq[i]) * dw * dx;
            bound += std::fabs(wv) * dx / 2 + std::fabs(xv) * dw / 2 + dw * dx / 4;
          }
          ASSERT_NEAR(y, dot, bound + 0x1p-22 * mag) << "r=" << r << " t=" << t;
        }
      }
      const auto ps = static_cast<int64_t>(pr * n * sizeof(int16_t));
      const int64_t pscales = n / kI16GroupCols * pr;
      auto run = [&](int tp, int tt) {
        std::vector<float> y(want.size(), std::nanf(""));
        for (int64_t t0 = 0; t0 < tokens; t0 += tt) {
          for (int64_t p0 = 0; p0 < panels; p0 += tp) {
            const int np = static_cast<int>(std::min<int64_t>(tp, panels - p0));
            const int nt = static_cast<int>(std::min<int64_t>(tt, tokens - t0));
            g.tile_i16(p.wq.data() + p0 * pr * n, ps, p.wd.data() + p0 * pscales, pscales, np, xp.data() + t0 * xs, xs,
                       nt, n, y.data() + t0 * rows + p0 * pr, rows, pr);
          }
        }
        return y;
      };
      for (int tp = 1; tp <= g.i16_panels; ++tp) {
        for (int tt = 1; tt <= g.i16_tokens; ++tt) {
          const std::vector<float> y = run(tp, tt);
          ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "tile " << tp << "x" << tt;
        }
      }
      for (int tp = 1; tp <= g.i16_stream_panels; ++tp) {
        const std::vector<float> y = run(tp, 1);
        ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "tile " << tp << "x1";
      }
      // Decode form (matmul's panel streams): panels `len` apart, one token.
      const int sp = g.i16_stream_panels;
      const int64_t len = panels / sp;
      std::vector<float> y(static_cast<size_t>(rows), std::nanf(""));
      for (int64_t j = 0; j < len; ++j) {
        g.tile_i16(p.wq.data() + j * pr * n, len * ps, p.wd.data() + j * pscales, len * pscales, sp, xp.data(), xs, 1,
                   n, y.data() + j * pr, rows, len * pr);
      }
      for (int64_t r = 0; r < sp * len * pr; ++r) {
        ASSERT_EQ(0, std::memcmp(&y[static_cast<size_t>(r)], &want[static_cast<size_t>(r)], sizeof(float))) << r;
      }
    }
  }
}

// The exact-sum bound at its extreme: every weight quant at ±2047 and every
// activation quant at ±16383 with matching signs, so each group's integer
// sum is ±2047 · 16383 · 64 = ±2,146,304,064, just under 2^31 (a wrapped
// sum would change sign). Every table's tile, every shape it takes, against
// dot_i16_ref bit for bit and against the exact value within float rounding.
TEST(GemmI16, GroupSumsAtTheBoundStayExact) {
  const auto tables = i16_tables();
  if (tables.empty()) GTEST_SKIP() << "no table with tile_i16 on this CPU";
  const int64_t n = 256, tokens = 2;
  for (const auto& [label, table] : tables) {
    SCOPED_TRACE(label);
    const GemmKernels& g = *table;
    const int pr = g.i16_panel_rows;
    const int64_t rows = pr;
    // Row r: +1.5 or -1.5 (by r's parity) times a sign pattern over the
    // columns; token 0 the same pattern, token 1 its negation.
    auto sign = [](int64_t c) { return ((c * 37) >> 3) % 2 == 0 ? 1.0f : -1.0f; };
    std::vector<uint16_t> w(static_cast<size_t>(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n; ++c)
        w[static_cast<size_t>(r * n + c)] = fp32_to_fp16((r % 2 == 0 ? 1.5f : -1.5f) * sign(c));
    }
    std::vector<float> x(static_cast<size_t>(tokens * n));
    for (int64_t c = 0; c < n; ++c) {
      x[static_cast<size_t>(c)] = 3.0f * sign(c);
      x[static_cast<size_t>(n + c)] = -3.0f * sign(c);
    }
    std::vector<int16_t> wq(w.size());
    std::vector<float> wd(static_cast<size_t>(rows * n / kI16GroupCols));
    repack_rows_as_i16_panel(DType::kF16, w.data(), wq.data(), wd.data(), rows, n, pr, &g);
    for (int16_t q : wq) ASSERT_EQ(std::abs(q), kI16WeightMax);
    const auto xs = packed_i16_row_bytes(n);
    std::vector<uint8_t> xp(static_cast<size_t>(tokens * xs));
    for (int64_t t = 0; t < tokens; ++t) pack(g, x.data() + t * n, xp.data() + t * xs, n);
    std::vector<float> y(static_cast<size_t>(tokens * rows), std::nanf(""));
    g.tile_i16(wq.data(), pr * n * 2, wd.data(), n / kI16GroupCols * pr, 1, xp.data(), xs, static_cast<int>(tokens), n,
               y.data(), rows, pr);
    std::vector<int16_t> row_q(static_cast<size_t>(n));
    std::vector<float> row_d(static_cast<size_t>(n / kI16GroupCols));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n; ++c)
        row_q[static_cast<size_t>(c)] = wq[static_cast<size_t>(c / 2 * 2 * pr + 2 * r + c % 2)];
      for (int64_t gi = 0; gi < n / kI16GroupCols; ++gi)
        row_d[static_cast<size_t>(gi)] = wd[static_cast<size_t>(gi * pr + r)];
      for (int64_t t = 0; t < tokens; ++t) {
        const float got = y[static_cast<size_t>(t * rows + r)];
        const float ref = dot_i16_ref(row_q.data(), row_d.data(), xp.data() + t * xs, n);
        ASSERT_EQ(0, std::memcmp(&got, &ref, sizeof(float))) << "r=" << r << " t=" << t;
        const double exact = (r % 2 == 0 ? 1.5 : -1.5) * (t == 0 ? 3.0 : -3.0) * static_cast<double>(n);
        ASSERT_NEAR(got, exact, 1e-5 * std::fabs(exact)) << "r=" << r << " t=" << t;
      }
    }
  }
}

// Every table with tile_i16 (AVX2, AVX-VNNI, AVX-512; different panel
// heights) gives the same bits for the same rows and activations: the group
// sums are exact and the float steps the same. Activations at the quant
// range's ends in a pattern that differs from pair to pair (the bound
// itself: GroupSumsAtTheBoundStayExact).
TEST(GemmI16, AllTablesGiveTheSameBits) {
  const auto tables = i16_tables();
  if (tables.size() < 2) GTEST_SKIP() << "fewer than two tables with tile_i16 on this CPU";
  const int64_t n = 1024, rows = 32, tokens = 4;
  std::vector<float> want;
  for (const auto& [label, table] : tables) {
    SCOPED_TRACE(label);
    const GemmKernels& g = *table;
    const int pr = g.i16_panel_rows;
    const Problem p = make_problem(rows, tokens, n, 77, pr);
    const auto xs = packed_i16_row_bytes(n);
    std::vector<uint8_t> xp(static_cast<size_t>(tokens * xs));
    for (int64_t t = 0; t < tokens; ++t) pack(g, p.x.data() + t * n, xp.data() + t * xs, n);
    for (int64_t t = 0; t < tokens; ++t) {
      auto* q = reinterpret_cast<int16_t*>(xp.data() + t * xs);
      for (int64_t i = 0; i < n; ++i)
        q[i] = (((static_cast<uint32_t>(i) * 2654435761u) >> 13) & 1) != 0 ? kI16ActMax : -kI16ActMax;
    }
    const auto ps = static_cast<int64_t>(pr * n * 2);
    const int64_t pscales = n / kI16GroupCols * pr;
    std::vector<float> y(static_cast<size_t>(tokens * rows));
    for (int64_t p0 = 0; p0 < rows / pr; ++p0) {
      g.tile_i16(p.wq.data() + p0 * pr * n, ps, p.wd.data() + p0 * pscales, pscales, 1, xp.data(), xs,
                 static_cast<int>(tokens), n, y.data() + p0 * pr, rows, pr);
    }
    if (want.empty()) {
      want = y;
    } else {
      EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)));
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
