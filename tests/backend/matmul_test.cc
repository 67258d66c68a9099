// matmul against a naive double-precision product for every dtype and both
// weight layouts, and its batch/thread invariance (bitwise) that the engine
// depends on.
#include "backend/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_bf16_ref.h"
#include "core/quant_ref.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

using testing::isa_label;
using testing::random_floats;

// Every weight type (Q8_K is an activation format only).
const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                        DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                        DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

bool is_quant(DType t) {
  return dtype_is_quantized(t);
}

struct Matrix {
  std::vector<uint8_t> bytes;  // [rows, row_bytes]
  std::vector<float> values;   // [rows, cols], dequantized
  MatrixView view;
};

Matrix make_matrix(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  Matrix m;
  const size_t row_bytes = dtype_row_bytes(t, cols);
  const std::vector<float> src = random_floats(rows * cols, seed);
  m.bytes.resize(row_bytes * static_cast<size_t>(rows));
  m.values.resize(src.size());
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(t, src.data() + r * cols, m.bytes.data() + r * row_bytes, cols);
    dequantize_row(t, m.bytes.data() + r * row_bytes, m.values.data() + r * cols, cols);
  }
  m.view = MatrixView{t, m.bytes.data(), rows, cols};
  return m;
}

// m's view as the engine hands it to k: prepare_matrix's x16 copy (owned by
// `storage`) where k has tile kernels for its type, else m.view itself;
// with half_inexact, F16 matrices as bf16 or int16 panels and BF16 matrices
// as int16 panels where k has them (and no bf16 tile).
MatrixView prepared(const Kernels& k, const Matrix& m, WeightStorage& storage, bool half_inexact = false) {
  ThreadPool pool(2);
  return prepare_matrix(k, m.view, pool, storage, half_inexact);
}

TEST(Matmul, MatchesDoublePrecisionReference) {
  // Pools are built once: a pool per case would dominate the run time.
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int threads : {1, 2, 3}) pools.push_back(std::make_unique<ThreadPool>(threads));
  uint32_t seed = 100;
  for (DType t : kTypes) {
    for (int64_t cols : {int64_t{64}, int64_t{96}, int64_t{33}, int64_t{256}}) {
      // K-quants need 256-element rows; the other types keep the small shapes.
      if (cols % dtype_block_elems(t) != 0 || (cols == 256 && !dtype_is_k_quant(t))) continue;
      for (int64_t rows : {1, 7, 37, 48}) {
        const Matrix m = make_matrix(t, rows, cols, seed++);
        for (int64_t n_tokens : {1, 3, 17}) {
          const std::vector<float> x = random_floats(n_tokens * cols, seed++, 2.0f);  // [n_tokens, cols]
          // The reference sees x as the kernel does: quantized to Q8_0 / Q8_K.
          std::vector<float> xr = x;
          if (is_quant(t)) {
            const DType act = dtype_vec_dot_type(t);
            for (int64_t tk = 0; tk < n_tokens; ++tk) {
              std::vector<uint8_t> q(dtype_row_bytes(act, cols));
              quantize_row(act, x.data() + tk * cols, q.data(), cols);
              dequantize_row(act, q.data(), xr.data() + tk * cols, cols);
            }
          }
          // The AVX512-BF16 tile (gemm.h tile_bf16_dp) rounds x to bf16 first.
          std::vector<float> xr_bf16(x.size());
          for (size_t i = 0; i < x.size(); ++i) xr_bf16[i] = bf16_to_fp32(fp32_to_bf16_daz(x[i]));
          std::vector<double> expect(static_cast<size_t>(n_tokens * rows));  // [n_tokens, rows]
          std::vector<double> tol(expect.size());
          std::vector<double> expect_bf16x(expect.size());  // against xr_bf16
          for (int64_t tk = 0; tk < n_tokens; ++tk) {
            for (int64_t r = 0; r < rows; ++r) {
              double dot = 0, abs = 0, dot_bf16x = 0;
              for (int64_t c = 0; c < cols; ++c) {
                const double p = static_cast<double>(m.values[r * cols + c]) * xr[tk * cols + c];
                dot += p;
                abs += std::fabs(p);
                dot_bf16x += static_cast<double>(m.values[r * cols + c]) * xr_bf16[tk * cols + c];
              }
              expect[tk * rows + r] = dot;
              expect_bf16x[tk * rows + r] = dot_bf16x;
              tol[tk * rows + r] = 1e-5 * abs + 1e-30;
            }
          }
          for (Isa isa : supported_isas()) {
            WeightStorage storage;
            MatrixView head = m.view;  // the output head's view (MatrixUse::kLogits)
            head.f32_activations = true;
            const MatrixView views[] = {m.view, prepared(kernels_for(isa), m, storage), head};
            for (const MatrixView& view : views) {
              for (const auto& pool_ptr : pools) {
                ThreadPool& pool = *pool_ptr;
                SCOPED_TRACE(
                    std::string(dtype_name(t)) + " " + isa_label(isa) + " rows=" + std::to_string(rows) +
                    " cols=" + std::to_string(cols) + " tokens=" + std::to_string(n_tokens) +
                    " threads=" + std::to_string(pool.size()) + (view.layout == WeightLayout::kX16 ? " x16" : "") +
                    (view.layout == WeightLayout::kBf16Panel ? " panels" : "") + (view.f32_activations ? " f32x" : ""));
                std::vector<uint8_t> scratch;
                std::vector<float> y(expect.size(), NAN);  // [n_tokens, rows]
                matmul(pool, kernels_for(isa), view, x.data(), n_tokens, y.data(), scratch);
                const GemmKernels* g = kernels_for(isa).gemm;
                const bool bf16x = view.layout == WeightLayout::kBf16Panel;
                // Where the table has the bf16 tile, prepare_matrix makes panels of what fits them.
                if (t == DType::kBF16 && g != nullptr && g->tile_bf16_dp != nullptr && !view.f32_activations &&
                    view.data != m.view.data) {
                  ASSERT_EQ(bf16x, fits_bf16_panels(rows, cols));
                }
                const std::vector<double>& want = bf16x ? expect_bf16x : expect;
                for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], want[i], tol[i]) << "i=" << i;
              }
            }
          }
        }
      }
    }
  }
}

// kernels_for(isa); with strip_bf16, the table of CPUs without AVX512-BF16
// (kernels_without_avx512_bf16), which take F16 as int16 panels under
// half_inexact.
const Kernels& table_for(Isa isa, bool strip_bf16) {
  return strip_bf16 ? kernels_without_avx512_bf16(isa) : kernels_for(isa);
}

// The tables whose AVX512-BF16 tile strip_bf16 removes.
bool has_bf16_tile(Isa isa) {
  const GemmKernels* g = kernels_for(isa).gemm;
  return g != nullptr && g->tile_bf16_dp != nullptr;
}

// Row t of a batched call equals the single-token call bitwise, for every
// thread count, including a matrix large enough to use several prefill tiles.
// Every ISA, with and without widened F16 / BF16 chunks (Kernels::widen_half_rows),
// and the tables with AVX512-BF16 also without it.
struct Setting {
  Isa isa;
  bool widen, strip_bf16;
};
std::vector<Setting> isa_widen_settings() {
  std::vector<Setting> s;
  for (Isa isa : supported_isas()) {
    s.push_back({isa, false, false});
    s.push_back({isa, true, false});
    if (has_bf16_tile(isa)) s.push_back({isa, false, true});
  }
  return s;
}

TEST(Matmul, BatchAndThreadInvariant) {
  const int64_t cols = 1024, n_tokens = 17;
  for (DType t : kTypes) {
    const bool half = t == DType::kF16 || t == DType::kBF16;
    for (bool inexact : half ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
      // BF16: 19 bf16 panels where the table has tile_bf16_dp (rows % 16 == 0);
      // F16 with inexact: the same as bf16 panels; F16 and BF16 with inexact
      // on tables without tile_bf16_dp: 38 / 19 int16 panels (AVX2 / AVX-512
      // without AVX512-BF16).
      const int64_t rows = t == DType::kBF16 || inexact ? 304 : 301;
      const Matrix m = make_matrix(t, rows, cols, 7);
      const std::vector<float> x = random_floats(n_tokens * cols, 8);  // [n_tokens, cols]
      for (const auto& [isa, widen, strip_bf16] : isa_widen_settings()) {
        Kernels k = table_for(isa, strip_bf16);
        k.widen_half_rows = widen;  // F16 / BF16 through widened chunks, and not (same bits)
        WeightStorage storage;
        const MatrixView view = prepared(k, m, storage, inexact);
        if (inexact && k.gemm != nullptr && k.gemm->tile_bf16_dp == nullptr && k.gemm->tile_i16 != nullptr) {
          ASSERT_EQ(view.layout, WeightLayout::kI16Panel);
        }
        std::vector<float> single(static_cast<size_t>(n_tokens * rows));  // [n_tokens, rows]
        {
          ThreadPool pool(1);
          std::vector<uint8_t> scratch;
          for (int64_t tk = 0; tk < n_tokens; ++tk) {
            matmul(pool, k, view, x.data() + tk * cols, 1, single.data() + tk * rows, scratch);
          }
        }
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(std::string(dtype_name(t)) + " " + isa_label(isa) + (widen ? " widened" : "") +
                       (strip_bf16 ? " without avx512_bf16" : "") + (inexact ? " inexact" : "") +
                       " threads=" + std::to_string(threads));
          ThreadPool pool(threads);
          std::vector<uint8_t> scratch;
          // A few tokens take the decode streams (decode_streams in matmul.cc),
          // more the L2-sized row chunks: both give the one-token bits.
          for (int64_t n : {int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}, n_tokens}) {
            SCOPED_TRACE("tokens=" + std::to_string(n));
            std::vector<float> batched(static_cast<size_t>(n * rows));  // [n, rows]
            matmul(pool, k, view, x.data(), n, batched.data(), scratch);
            EXPECT_EQ(0, std::memcmp(batched.data(), single.data(), batched.size() * sizeof(float)));
          }
          std::vector<float> one(static_cast<size_t>(rows));
          matmul(pool, k, view, x.data() + 5 * cols, 1, one.data(), scratch);
          EXPECT_EQ(0, std::memcmp(one.data(), single.data() + 5 * rows, one.size() * sizeof(float)));
        }
      }
    }
  }
}

// matmul_multi equals separate matmul calls bit for bit: stacked matrices of
// one dtype (one parallel region, odd row counts across the thread split),
// and a mixed-dtype list (the per-matrix fallback).
TEST(Matmul, MultiEqualsSeparateCalls) {
  const int64_t cols = 512;
  struct Case {
    DType t;
    bool inexact;
    int64_t a_rows, b_rows;
  };
  // BF16 rows in whole 16-row panels, so that all three stack as bf16
  // panels; F16 with inexact as bf16 or int16 panels, once with 200 rows
  // (8-row panels that end inside a 16-row thread granule on AVX2); BF16
  // with inexact as int16 panels on tables without the bf16 tile.
  const Case cases[] = {{DType::kF16, false, 200, 37},  {DType::kF16, true, 208, 48},  {DType::kF16, true, 200, 48},
                        {DType::kBF16, false, 208, 48}, {DType::kBF16, true, 200, 48}, {DType::kQ8_0, false, 200, 37},
                        {DType::kQ4_0, false, 200, 37}, {DType::kQ4_K, false, 200, 37}};
  for (const auto& [t, inexact, a_rows, b_rows] : cases) {
    const Matrix a = make_matrix(t, a_rows, cols, 21), b = make_matrix(t, b_rows, cols, 22),
                 c = make_matrix(t, 64, cols, 23);
    const Matrix mixed = make_matrix(t == DType::kQ8_0 ? DType::kQ6_K : DType::kQ8_0, 48, cols, 24);
    for (const auto& [isa, widen, strip_bf16] : isa_widen_settings()) {
      if (widen) continue;
      for (int64_t n_tokens : {1, 3, 9}) {
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE(std::string(dtype_name(t)) + (inexact ? " inexact " : " ") + isa_label(isa) +
                       (strip_bf16 ? " without avx512_bf16" : "") + " tokens=" + std::to_string(n_tokens) +
                       " threads=" + std::to_string(threads));
          const Kernels k = table_for(isa, strip_bf16);
          ThreadPool pool(threads);
          std::vector<uint8_t> scratch;
          const std::vector<float> x = random_floats(n_tokens * cols, 25);
          const Matrix* ms[] = {&a, &b, &c, &mixed};
          WeightStorage storage;
          std::vector<MatrixView> views;
          for (const Matrix* m : ms) views.push_back(prepared(k, *m, storage, inexact));
          std::vector<std::vector<float>> expect, got;
          std::vector<MatmulTarget> targets;
          for (const MatrixView& v : views) {
            expect.emplace_back(static_cast<size_t>(n_tokens * v.rows));
            got.emplace_back(expect.back().size(), -1.0f);
            matmul(pool, k, v, x.data(), n_tokens, expect.back().data(), scratch);
          }
          for (size_t i = 0; i < 4; ++i) targets.push_back({views[i], got[i].data()});
          matmul_multi(pool, k, std::span<const MatmulTarget>(targets.data(), 3), x.data(), n_tokens, scratch);
          matmul_multi(pool, k, targets, x.data(), n_tokens, scratch);  // mixed dtypes
          for (size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(0, std::memcmp(got[i].data(), expect[i].data(), got[i].size() * sizeof(float))) << "matrix " << i;
          }
        }
      }
    }
  }
}

TEST(Matmul, ScratchGrowsAndIsReused) {
  const Matrix m = make_matrix(DType::kQ8_0, 8, 64, 3);
  ThreadPool pool(2);
  std::vector<uint8_t> scratch;
  const std::vector<float> x = random_floats(4 * 64, 4);
  std::vector<float> y(4 * 8);
  matmul(pool, kernels(), m.view, x.data(), 4, y.data(), scratch);
  EXPECT_GE(scratch.size(), 4 * dtype_row_bytes(DType::kQ8_0, 64));
  const size_t cap = scratch.size();
  matmul(pool, kernels(), m.view, x.data(), 1, y.data(), scratch);
  EXPECT_EQ(scratch.size(), cap);
}

}  // namespace
}  // namespace tessera::cpu
