// Tile kernels (backend/cpu/gemm.h) on every ISA that has them: the x16
// weight layout and the packed activation layout (Q6_K: GGUF rows against
// plain Q8_K rows), values against a
// double-precision product, and the batch-invariance contract (an element's
// bits do not depend on tile shape).
#include "backend/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/weight_layout.h"
#include "core/dtype.h"
#include "core/quant_ref.h"
#include "test_util.h"

namespace tessera::cpu {
namespace {

using testing::isa_label;
using testing::random_floats;

// A weight matrix [rows, n] of dtype t, its dequantized values, activations
// [tokens, n] (f32 or packed) and what the tile kernels should approximate.
struct Problem {
  DType dtype;
  int64_t rows, tokens, n;
  std::vector<uint8_t> w;     // [rows, row_bytes], in the kernel's layout (x16 for Q8_0 / Q4_0 / Q4_K)
  std::vector<float> w_f32;   // [rows, n] dequantized
  std::vector<float> x;       // [tokens, n] f32 activations
  std::vector<float> x_used;  // [tokens, n] what the kernel multiplies (Q8_0 / Q8_K round trip for quantized)
  size_t w_row_bytes;
};

bool is_quant(DType t) {
  return t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_K || t == DType::kQ6_K || t == DType::kQ4_1 ||
         t == DType::kQ5_0 || t == DType::kQ5_1 || t == DType::kQ2_K || t == DType::kQ3_K || t == DType::kQ5_K;
}

// The x16 super-block formats (packed Q8_K activations, pack_q8k).
bool is_k_x16(DType t) {
  return t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ3_K || t == DType::kQ2_K;
}

// The super-block formats (rows a multiple of 256 elements).
bool is_k_quant(DType t) {
  return is_k_x16(t) || reads_q8k_rows(t);
}

Problem make_problem(DType t, int64_t rows, int64_t tokens, int64_t n, uint32_t seed) {
  Problem p{t, rows, tokens, n, {}, {}, {}, {}, dtype_row_bytes(t, n)};
  p.w.resize(p.w_row_bytes * static_cast<size_t>(rows));
  p.w_f32.resize(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> src = random_floats(n, seed + static_cast<uint32_t>(r));
    uint8_t* dst = p.w.data() + static_cast<size_t>(r) * p.w_row_bytes;
    quantize_row(t, src.data(), dst, n);
    dequantize_row(t, dst, p.w_f32.data() + r * n, n);
  }
  if (has_x16_layout(t)) {
    const std::vector<uint8_t> gguf = p.w;
    repack_rows_x16(t, gguf.data(), p.w.data(), rows, n);
  }
  p.x = random_floats(tokens * n, seed + 1000, 2.0f);
  p.x_used = p.x;
  if (is_quant(t)) {  // the activation format of the weight type: Q8_0, or Q8_K for Q4_K / Q6_K
    const DType act = dtype_vec_dot_type(t);
    std::vector<uint8_t> q(dtype_row_bytes(act, n));
    for (int64_t k = 0; k < tokens; ++k) {
      quantize_row(act, p.x.data() + k * n, q.data(), n);
      dequantize_row(act, q.data(), p.x_used.data() + k * n, n);
    }
  }
  return p;
}

// Activations in the kernel's input format: packed groups (64-byte aligned)
// or the f32 rows themselves.
struct Activations {
  std::vector<PackedQ8x16Group> packed;
  std::vector<PackedQ8KGroup> packed_k;
  std::vector<BlockQ8_K> q8k;  // [tokens, n / 256] (Q6_K)
  const void* data = nullptr;
  int64_t stride = 0;  // bytes between rows
};

Activations make_activations(const GemmKernels& g, const Problem& p) {
  Activations a;
  if (reads_q8k_rows(p.dtype)) {
    const int64_t nb = p.n / kSuperBlockElems;
    a.q8k.resize(static_cast<size_t>(nb * p.tokens));
    for (int64_t k = 0; k < p.tokens; ++k) quantize_row(DType::kQ8_K, p.x.data() + k * p.n, a.q8k.data() + k * nb, p.n);
    a.data = a.q8k.data();
    a.stride = nb * static_cast<int64_t>(sizeof(BlockQ8_K));
  } else if (is_k_x16(p.dtype)) {
    const size_t row_bytes = packed_q8k_row_bytes(p.n);
    const size_t groups = row_bytes / sizeof(PackedQ8KGroup);
    a.packed_k.resize(groups * static_cast<size_t>(p.tokens));
    for (int64_t k = 0; k < p.tokens; ++k) g.pack_q8k(p.x.data() + k * p.n, a.packed_k.data() + k * groups, p.n);
    a.data = a.packed_k.data();
    a.stride = static_cast<int64_t>(row_bytes);
  } else if (is_quant(p.dtype)) {
    const size_t row_bytes = packed_q8x16_row_bytes(p.n);
    const size_t groups = row_bytes / sizeof(PackedQ8x16Group);
    a.packed.resize(groups * static_cast<size_t>(p.tokens));
    for (int64_t k = 0; k < p.tokens; ++k)
      g.pack_q8x16(p.x.data() + k * p.n, a.packed.data() + k * groups, p.n, x16_act_offset(p.dtype));
    a.data = a.packed.data();
    a.stride = static_cast<int64_t>(row_bytes);
  } else {
    a.data = p.x.data();
    a.stride = p.n * static_cast<int64_t>(sizeof(float));
  }
  return a;
}

// Tile (r0, t0) of rows × tokens into y[tokens_total, rows_total].
void run_tile(const GemmKernels& g, const Problem& p, const Activations& a, int64_t r0, int rows, int64_t t0,
              int tokens, float* y) {
  const auto ws = static_cast<int64_t>(p.w_row_bytes);
  const uint8_t* w = p.w.data() + static_cast<size_t>(r0) * p.w_row_bytes;
  const void* x = static_cast<const uint8_t*>(a.data) + t0 * a.stride;
  float* out = y + t0 * p.rows + r0;
  switch (p.dtype) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
      x16_tile(g, p.dtype)(w, ws, rows, static_cast<const PackedQ8x16Group*>(x), a.stride, tokens, p.n, out, p.rows);
      break;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ3_K:
    case DType::kQ2_K:
      k_x16_tile(g, p.dtype)(w, ws, rows, static_cast<const PackedQ8KGroup*>(x), a.stride, tokens, p.n, out, p.rows);
      break;
    case DType::kQ6_K:
      q8k_tile(g, p.dtype)(w, ws, rows, static_cast<const BlockQ8_K*>(x), a.stride, tokens, p.n, out, p.rows);
      break;
    case DType::kF32:
      g.tile_f32(reinterpret_cast<const float*>(w), ws, rows, static_cast<const float*>(x), a.stride, tokens, p.n, out,
                 p.rows);
      break;
    case DType::kF16:
      g.tile_f16(reinterpret_cast<const uint16_t*>(w), ws, rows, static_cast<const float*>(x), a.stride, tokens, p.n,
                 out, p.rows);
      break;
    case DType::kBF16:
      g.tile_bf16(reinterpret_cast<const uint16_t*>(w), ws, rows, static_cast<const float*>(x), a.stride, tokens, p.n,
                  out, p.rows);
      break;
    default:
      FAIL() << "no tile kernel for " << dtype_name(p.dtype);
  }
}

// The whole product with tiles of one shape (edges get smaller tiles).
std::vector<float> run_with_shape(const GemmKernels& g, const Problem& p, const Activations& a, int tr, int tt) {
  std::vector<float> y(static_cast<size_t>(p.rows * p.tokens), std::nanf(""));
  for (int64_t t0 = 0; t0 < p.tokens; t0 += tt) {
    for (int64_t r0 = 0; r0 < p.rows; r0 += tr) {
      run_tile(g, p, a, r0, static_cast<int>(std::min<int64_t>(tr, p.rows - r0)), t0,
               static_cast<int>(std::min<int64_t>(tt, p.tokens - t0)), y.data());
    }
  }
  return y;
}

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                        DType::kQ4_K, DType::kQ6_K, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                        DType::kQ2_K, DType::kQ3_K, DType::kQ5_K};

TEST(Gemm, PackedLayoutMatchesQ8_0Blocks) {
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g == nullptr) continue;
    SCOPED_TRACE(isa_label(isa));
    for (int64_t n : {32, 96, 512, 544, 2048}) {
      const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n), 3.0f);
      const int64_t nb = n / kQuantBlockElems;
      std::vector<BlockQ8_0> q(static_cast<size_t>(nb));
      quantize_row_q8_0_ref(x.data(), q.data(), n);
      std::vector<PackedQ8x16Group> packed(packed_q8x16_row_bytes(n) / sizeof(PackedQ8x16Group));
      g->pack_q8x16(x.data(), packed.data(), n, kQ4Offset);
      for (size_t gi = 0; gi < packed.size(); ++gi) {
        for (int b = 0; b < 16; ++b) {
          const int64_t blk = static_cast<int64_t>(gi) * 16 + b;
          int32_t sum = 0;
          for (int e = 0; e < 32; ++e) {
            const int8_t want = blk < nb ? q[static_cast<size_t>(blk)].qs[e] : 0;
            ASSERT_EQ(packed[gi].q[e / 4][4 * b + e % 4], want) << "block " << blk << " element " << e;
            sum += want;
          }
          ASSERT_EQ(packed[gi].d[b], blk < nb ? fp16_to_fp32(q[static_cast<size_t>(blk)].d) : 0.0f);
          ASSERT_EQ(packed[gi].offset_sum[b], -kQ4Offset * sum);
        }
      }
    }
  }
}

// Every tile shape gives the 1 x 1 tile's bits, and the values agree with
// the dequantized double-precision product to 1e-5 * sum|w * x|.
TEST(Gemm, TileShapesAreBitIdenticalAndAccurate) {
  bool any = false;
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g == nullptr) continue;
    any = true;
    SCOPED_TRACE(isa_label(isa));
    ASSERT_TRUE(g->q4_k_rows >= 1 && g->q4_k_rows <= g->quant_rows);
    ASSERT_TRUE(g->q4_k_tokens >= 1 && g->q4_k_tokens <= g->quant_tokens);
    ASSERT_TRUE(g->q5_k_rows >= 1 && g->q5_k_rows <= g->quant_rows);
    ASSERT_TRUE(g->q5_k_tokens >= 1 && g->q5_k_tokens <= g->quant_tokens);
    ASSERT_TRUE(g->q8_0_rows >= 1 && g->q8_0_rows <= g->quant_rows);
    ASSERT_TRUE(g->q8_0_tokens >= 1 && g->q8_0_tokens <= g->quant_tokens);
    ASSERT_TRUE(g->q4_0_rows >= 1 && g->q4_0_rows <= g->quant_rows);
    ASSERT_TRUE(g->q4_0_tokens >= 1 && g->q4_0_tokens <= g->quant_tokens);
    ASSERT_TRUE(g->q6_k_rows >= 1 && g->q6_k_rows <= g->quant_rows);
    ASSERT_TRUE(g->q5_k_decode_rows >= 1 && g->q5_k_decode_rows <= g->quant_rows);
    ASSERT_TRUE(g->q6_k_decode_rows >= 1 && g->q6_k_decode_rows <= g->quant_rows);
    ASSERT_TRUE(g->q3_k_decode_rows >= 1 && g->q3_k_decode_rows <= g->quant_rows);
    ASSERT_TRUE(g->q2_k_rows >= 1 && g->q2_k_rows <= g->quant_rows);
    ASSERT_TRUE(g->q2_k_tokens >= 1 && g->q2_k_tokens <= g->quant_tokens);
    ASSERT_TRUE(g->q3_k_rows >= 1 && g->q3_k_rows <= g->quant_rows);
    ASSERT_TRUE(g->q3_k_tokens >= 1 && g->q3_k_tokens <= g->quant_tokens);
    ASSERT_TRUE(g->q6_k_tokens >= 1 && g->q6_k_tokens <= g->quant_tokens);
    uint32_t seed = 7;
    for (DType t : kTypes) {
      if (!has_tile(*g, t)) continue;  // that type uses the dot products on this ISA
      const std::vector<int64_t> sizes = is_k_quant(t) ? std::vector<int64_t>{256, 768, 1024, 1280, 2048}
                                         : is_quant(t) ? std::vector<int64_t>{32, 96, 512, 544, 992, 2048}
                                                       : std::vector<int64_t>{1, 15, 16, 33, 100, 2048};
      // Every shape the table dispatches (Q4_K's prefill tile is smaller, its decode tile not).
      const int max_r = is_quant(t) ? g->quant_rows : g->float_rows;
      const int max_t = is_quant(t) ? g->quant_tokens : g->float_tokens;
      for (int64_t n : sizes) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
        const Problem p = make_problem(t, 2 * max_r + 1, 2 * max_t + 1, n, seed += 100);
        const Activations a = make_activations(*g, p);
        const std::vector<float> one = run_with_shape(*g, p, a, 1, 1);
        for (int64_t k = 0; k < p.tokens; ++k) {
          for (int64_t r = 0; r < p.rows; ++r) {
            double dot = 0, mag = 0;
            for (int64_t i = 0; i < n; ++i) {
              const double prod = static_cast<double>(p.w_f32[static_cast<size_t>(r * n + i)]) *
                                  p.x_used[static_cast<size_t>(k * n + i)];
              dot += prod;
              mag += std::fabs(prod);
            }
            ASSERT_NEAR(one[static_cast<size_t>(k * p.rows + r)], dot, 1e-5 * mag + 1e-30) << "r=" << r << " t=" << k;
          }
        }
        if (is_quant(t)) {
          // Decode form (matmul's decode_streams): one token, a tile of rows
          // two rows apart.
          const auto ws = static_cast<int64_t>(2 * p.w_row_bytes);
          for (int64_t k = 0; k < p.tokens; ++k) {
            const auto* xk =
                reinterpret_cast<const PackedQ8x16Group*>(static_cast<const uint8_t*>(a.data) + k * a.stride);
            for (int tr = 2; tr <= max_r; ++tr) {
              for (int64_t r0 = 0; r0 + 2 * (tr - 1) < p.rows; ++r0) {
                std::vector<float> out(static_cast<size_t>(tr));
                const uint8_t* w0 = p.w.data() + static_cast<size_t>(r0) * p.w_row_bytes;
                if (k_x16_tile(*g, t) != nullptr) {
                  k_x16_tile(*g, t)(w0, ws, tr, reinterpret_cast<const PackedQ8KGroup*>(xk), a.stride, 1, n, out.data(),
                                    1);
                } else if (reads_q8k_rows(t)) {
                  q8k_tile(*g, t)(w0, ws, tr, reinterpret_cast<const BlockQ8_K*>(xk), a.stride, 1, n, out.data(), 1);
                } else {
                  x16_tile(*g, t)(w0, ws, tr, xk, a.stride, 1, n, out.data(), 1);
                }
                for (int s = 0; s < tr; ++s) {
                  ASSERT_EQ(0, std::memcmp(&out[s], &one[static_cast<size_t>(k * p.rows + r0 + 2 * s)], sizeof(float)))
                      << "rows two apart: tile " << tr << " from row " << r0;
                }
              }
            }
          }
        }
        for (int tr = 1; tr <= max_r; ++tr) {
          for (int tt = 1; tt <= max_t; ++tt) {
            const std::vector<float> y = run_with_shape(*g, p, a, tr, tt);
            ASSERT_EQ(0, std::memcmp(y.data(), one.data(), y.size() * sizeof(float)))
                << "tile " << tr << "x" << tt << " differs from 1x1";
          }
        }
      }
    }
  }
  if (!any) GTEST_SKIP() << "no ISA with tile kernels on this CPU";
}

// widen_f16 / widen_bf16 (gemm.h): F16 / BF16 rows widened to f32 are exact
// (every element equals the reference conversion), and tile_f32 over them
// gives tile_f16's / tile_bf16's bits in every tile shape, so matmul's
// widened prefill chunks agree with the one-token tiles. Row lengths with
// and without a tail of n % 8 elements; special values (±0, subnormals,
// infinities) in the widened rows.
TEST(Gemm, WidenedHalfRowsGiveTheHalfTileBits) {
  bool any = false;
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g == nullptr || g->widen_f16 == nullptr) continue;
    ASSERT_NE(g->widen_bf16, nullptr);
    any = true;
    SCOPED_TRACE(isa_label(isa));
    uint32_t seed = 31;
    for (DType t : {DType::kF16, DType::kBF16}) {
      auto widen = t == DType::kF16 ? g->widen_f16 : g->widen_bf16;
      // ±0, the smallest and largest subnormal, ±infinity, 1, the largest finite value, -2.
      std::vector<uint16_t> sv =
          t == DType::kF16
              ? std::vector<uint16_t>{0x0000, 0x8000, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x3c00, 0x7bff, 0xc000}
              : std::vector<uint16_t>{0x0000, 0x8000, 0x0001, 0x007f, 0x7f80, 0xff80, 0x3f80, 0x7f7f, 0xc000};
      std::vector<float> wide(sv.size()), ref(sv.size());
      widen(sv.data(), wide.data(), static_cast<int64_t>(sv.size()));
      dequantize_row(t, sv.data(), ref.data(), static_cast<int64_t>(sv.size()));
      ASSERT_EQ(0, std::memcmp(wide.data(), ref.data(), wide.size() * sizeof(float))) << dtype_name(t) << " specials";
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{33}, int64_t{100}, int64_t{2048}}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
        const Problem p = make_problem(t, 2 * g->float_rows + 1, 2 * g->float_tokens + 1, n, seed += 100);
        const Activations a = make_activations(*g, p);
        const std::vector<float> one = run_with_shape(*g, p, a, 1, 1);
        // The widened copy: rows one cache line longer than n, as matmul pads them.
        const int64_t ws = n + 16;
        std::vector<float> w32(static_cast<size_t>(p.rows * ws), std::nanf(""));
        for (int64_t r = 0; r < p.rows; ++r) {
          widen(reinterpret_cast<const uint16_t*>(p.w.data() + static_cast<size_t>(r) * p.w_row_bytes),
                w32.data() + r * ws, n);
          ASSERT_EQ(0, std::memcmp(w32.data() + r * ws, p.w_f32.data() + r * n, static_cast<size_t>(n) * sizeof(float)))
              << "row " << r << " widened";
        }
        for (int tr = 1; tr <= g->float_rows; ++tr) {
          for (int tt = 1; tt <= g->float_tokens; ++tt) {
            std::vector<float> y(one.size(), std::nanf(""));
            for (int64_t t0 = 0; t0 < p.tokens; t0 += tt) {
              for (int64_t r0 = 0; r0 < p.rows; r0 += tr) {
                g->tile_f32(w32.data() + r0 * ws, ws * static_cast<int64_t>(sizeof(float)),
                            static_cast<int>(std::min<int64_t>(tr, p.rows - r0)), p.x.data() + t0 * n,
                            n * static_cast<int64_t>(sizeof(float)),
                            static_cast<int>(std::min<int64_t>(tt, p.tokens - t0)), n, y.data() + t0 * p.rows + r0,
                            p.rows);
              }
            }
            ASSERT_EQ(0, std::memcmp(y.data(), one.data(), y.size() * sizeof(float)))
                << "widened tile " << tr << "x" << tt << " differs from the half tile";
          }
        }
      }
    }
  }
  if (!any) GTEST_SKIP() << "no ISA with widen_f16 on this CPU";
}

// Q6_K's tile against the same ISA's dot_q6_k (gemm.h: bit-identical, so
// the tiled prefill and the untiled decode / fallback agree exactly), on
// blocks of random bytes: codes 0..63 and scales -128..127 at their ends
// (a saturated pair sum would show), activations with |q| up to 127. Every
// tile shape; rows of 1 to 5 super-blocks.
TEST(Gemm, Q6KTileMatchesDotProductBits) {
  bool any = false;
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels_for(isa);
    if (k.gemm == nullptr || !has_tile(*k.gemm, DType::kQ6_K)) continue;
    any = true;
    SCOPED_TRACE(isa_label(isa));
    const GemmKernels& g = *k.gemm;
    for (int64_t nb : {1, 2, 5}) {
      const int64_t n = nb * kSuperBlockElems;
      SCOPED_TRACE("n=" + std::to_string(n));
      const int64_t rows = 2 * g.quant_rows + 1, tokens = 2 * g.quant_tokens + 1;
      Problem p{DType::kQ6_K, rows, tokens, n, {}, {}, {}, {}, dtype_row_bytes(DType::kQ6_K, n)};
      std::mt19937 rng(static_cast<uint32_t>(nb));
      p.w.resize(p.w_row_bytes * static_cast<size_t>(rows));
      for (uint8_t& byte : p.w) byte = static_cast<uint8_t>(rng());
      auto* blocks = reinterpret_cast<BlockQ6_K*>(p.w.data());
      for (int64_t b = 0; b < rows * nb; ++b) {
        blocks[b].d = fp32_to_fp16(std::ldexp(1.0f, -static_cast<int>(rng() % 12)));
        if (b % 3 == 0) std::memset(blocks[b].ql, 0xff, sizeof(blocks[b].ql));          // codes 15 | high bits
        if (b % 4 == 1) std::memset(blocks[b].qh, 0xff, sizeof(blocks[b].qh));          // codes >= 48
        if (b % 5 == 2) std::memset(blocks[b].scales, 0x80, sizeof(blocks[b].scales));  // -128
      }
      p.x = random_floats(tokens * n, static_cast<uint32_t>(nb) + 50, 3.0f);
      const Activations a = make_activations(g, p);
      std::vector<float> want(static_cast<size_t>(rows * tokens));  // [tokens, rows]
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          want[static_cast<size_t>(t * rows + r)] = k.quant->dot_q6_k(blocks + r * nb, a.q8k.data() + t * nb, n);
        }
      }
      for (int tr = 1; tr <= g.quant_rows; ++tr) {
        for (int tt = 1; tt <= g.quant_tokens; ++tt) {
          const std::vector<float> y = run_with_shape(g, p, a, tr, tt);
          ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "tile " << tr << "x" << tt;
        }
      }
    }
  }
  if (!any) GTEST_SKIP() << "no ISA with a Q6_K tile kernel on this CPU";
}

// The Q2_K and Q3_K tiles (x16) against dot_q2_k / dot_q3_k on the GGUF
// rows to 1e-6 of sum|w * x| (the same exact integers per sub-block, summed
// in another float order), each shape bit for bit against the 1 x 1 tile.
// Random bytes (all codes and scale bits), scales and minima 2^-k.
TEST(Gemm, Q2KQ3KTilesMatchDotProducts) {
  bool any = false;
  for (Isa isa : supported_isas()) {
    const Kernels& k = kernels_for(isa);
    if (k.gemm == nullptr || !has_tile(*k.gemm, DType::kQ3_K)) continue;
    ASSERT_TRUE(has_tile(*k.gemm, DType::kQ2_K));
    any = true;
    SCOPED_TRACE(isa_label(isa));
    const GemmKernels& g = *k.gemm;
    for (DType t : {DType::kQ2_K, DType::kQ3_K}) {
      for (int64_t nb : {1, 2, 5}) {
        const int64_t n = nb * kSuperBlockElems;
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
        const int64_t rows = 2 * g.quant_rows + 1, tokens = 2 * g.quant_tokens + 1;
        Problem p{t, rows, tokens, n, {}, {}, {}, {}, dtype_row_bytes(t, n)};
        std::mt19937 rng(static_cast<uint32_t>(nb) + (t == DType::kQ2_K ? 0u : 100u));
        p.w.resize(p.w_row_bytes * static_cast<size_t>(rows));
        for (uint8_t& byte : p.w) byte = static_cast<uint8_t>(rng());
        for (int64_t b = 0; b < rows * nb; ++b) {
          const uint16_t d = fp32_to_fp16(std::ldexp(1.0f, -static_cast<int>(rng() % 12)));
          if (t == DType::kQ2_K) {
            auto& blk = reinterpret_cast<BlockQ2_K*>(p.w.data())[b];
            blk.d = d;
            blk.dmin = fp32_to_fp16(std::ldexp(1.0f, -static_cast<int>(rng() % 12)));
          } else {
            reinterpret_cast<BlockQ3_K*>(p.w.data())[b].d = d;
          }
        }
        p.x = random_floats(tokens * n, static_cast<uint32_t>(nb) + 70, 3.0f);
        std::vector<BlockQ8_K> xq(static_cast<size_t>(nb * tokens));
        for (int64_t tk = 0; tk < tokens; ++tk) k.quant->quantize_row_q8_k(p.x.data() + tk * n, xq.data() + tk * nb, n);
        std::vector<float> want(static_cast<size_t>(rows * tokens));  // [tokens, rows]
        std::vector<double> scale(want.size());                       // sum |w * x|
        std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
        for (int64_t tk = 0; tk < tokens; ++tk) {
          const BlockQ8_K* xr = xq.data() + tk * nb;
          dequantize_row(DType::kQ8_K, xr, xf.data(), n);
          for (int64_t r = 0; r < rows; ++r) {
            const uint8_t* wr = p.w.data() + static_cast<size_t>(r) * p.w_row_bytes;
            const auto at = static_cast<size_t>(tk * rows + r);
            want[at] = t == DType::kQ2_K ? k.quant->dot_q2_k(reinterpret_cast<const BlockQ2_K*>(wr), xr, n)
                                         : k.quant->dot_q3_k(reinterpret_cast<const BlockQ3_K*>(wr), xr, n);
            dequantize_row(t, wr, wf.data(), n);
            for (int64_t i = 0; i < n; ++i)
              scale[at] += std::fabs(double{wf[static_cast<size_t>(i)]} * xf[static_cast<size_t>(i)]);
          }
        }
        if (has_x16_layout(t)) {
          const std::vector<uint8_t> gguf = p.w;
          repack_rows_x16(t, gguf.data(), p.w.data(), rows, n);
        }
        const Activations a = make_activations(g, p);
        const std::vector<float> one = run_with_shape(g, p, a, 1, 1);
        for (size_t i = 0; i < one.size(); ++i) ASSERT_NEAR(one[i], want[i], 1e-6 * scale[i]) << "element " << i;
        for (int tr = 1; tr <= g.quant_rows; ++tr) {
          for (int tt = 1; tt <= g.quant_tokens; ++tt) {
            const std::vector<float> y = run_with_shape(g, p, a, tr, tt);
            ASSERT_EQ(0, std::memcmp(y.data(), one.data(), y.size() * sizeof(float))) << "tile " << tr << "x" << tt;
          }
        }
      }
    }
  }
  if (!any) GTEST_SKIP() << "no ISA with Q2_K / Q3_K tile kernels on this CPU";
}

// For the ExtremeQuants tests: activations of p set to ±127 (and some
// zeros; every third token all +127) with amax 127 in every 32 elements,
// so that their Q8_0 and Q8_K scales are 1 and their quants the values;
// then every output of every tile shape must be the exact integer sum of
// wq (the weights' integer values, [p.rows, p.n]) times them.
void expect_exact_integer_sums(const GemmKernels& g, Problem& p, const std::vector<int32_t>& wq) {
  const int64_t n = p.n;
  p.x.resize(static_cast<size_t>(p.tokens * n));
  for (int64_t k = 0; k < p.tokens; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      float v = k % 3 == 0 || ((k + i / 8) & 1) == 0 ? 127.0f : -127.0f;
      if (i % 32 != 0 && (i + k) % 13 == 0) v = 0.0f;
      p.x[static_cast<size_t>(k * n + i)] = v;
    }
  }
  const Activations a = make_activations(g, p);
  const std::vector<float> one_tile = run_with_shape(g, p, a, 1, 1);
  for (int64_t k = 0; k < p.tokens; ++k) {
    for (int64_t r = 0; r < p.rows; ++r) {
      int64_t want = 0;
      for (int64_t i = 0; i < n; ++i) {
        want += int64_t{wq[static_cast<size_t>(r * n + i)]} * static_cast<int64_t>(p.x[static_cast<size_t>(k * n + i)]);
      }
      ASSERT_EQ(one_tile[static_cast<size_t>(k * p.rows + r)], static_cast<float>(want)) << "r=" << r << " t=" << k;
    }
  }
  for (int tr = 1; tr <= g.quant_rows; ++tr) {
    for (int tt = 1; tt <= g.quant_tokens; ++tt) {
      const std::vector<float> y = run_with_shape(g, p, a, tr, tt);
      ASSERT_EQ(0, std::memcmp(y.data(), one_tile.data(), y.size() * sizeof(float))) << "tile " << tr << "x" << tt;
    }
  }
}

// The integer products at the ends of their ranges (weight quants 0 / 15 for
// Q4_0 and Q4_1, 0 / 31 for Q5_0 and Q5_1, -128 / 127 for Q8_0; activations
// ±127, 0), with unit scales (and zero minima) so that every output is an
// exact integer in f32 (|y| < 2^24): a saturated or wrapped 16-bit pair sum
// (the AVX2 vpmaddubsw path; 5-bit sums of four quant words would wrap)
// would change the result by a multiple of 2^15. Rows of 512 and 544
// elements (a short last group); every tile shape.
TEST(Gemm, ExtremeQuantsGiveExactIntegerSums) {
  bool any = false;
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g == nullptr) continue;
    SCOPED_TRACE(isa_label(isa));
    for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1}) {
      if (!has_tile(*g, t)) continue;
      any = true;
      // Bytes before the quants (d; m = 0 at 2 for Q4_1 / Q5_1; qh after them for Q5_x).
      const bool has_min = t == DType::kQ4_1 || t == DType::kQ5_1;
      const bool five = t == DType::kQ5_0 || t == DType::kQ5_1;
      const size_t qh_at = has_min ? 4 : 2;
      const size_t qs_at = 2 + (has_min ? 2 : 0) + (five ? 4 : 0);
      for (int64_t n : {512, 544}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
        const int64_t rows = 2 * g->quant_rows + 1, tokens = 2 * g->quant_tokens + 1, nb = n / kQuantBlockElems;
        Problem p{t, rows, tokens, n, {}, {}, {}, {}, dtype_row_bytes(t, n)};
        std::vector<uint8_t> gguf(p.w_row_bytes * static_cast<size_t>(rows));
        std::vector<int32_t> wq(static_cast<size_t>(rows * n));  // the weights' integer values
        const uint16_t one = fp32_to_fp16(1.0f);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t b = 0; b < nb; ++b) {
            uint8_t* blk = gguf.data() + static_cast<size_t>(r) * p.w_row_bytes + b * dtype_block_bytes(t);
            std::memcpy(blk, &one, 2);
            for (int e = 0; e < 32; ++e) {
              // Mostly the extremes, in runs that line up with activations of either sign;
              // every third row of a 5-bit type all high (against the all-positive tokens
              // below: 16 products of 31 * 127 per s16 lane would wrap).
              const bool high = (five && r % 3 == 0) || ((r + b + e / 8) & 1) == 0;
              int32_t v;
              if (t == DType::kQ8_0) {
                v = high ? 127 : -128;
                if ((e + r) % 11 == 0) v = -127;
                blk[2 + e] = static_cast<uint8_t>(static_cast<int8_t>(v));
              } else {
                const int u = high ? (five ? 31 : 15) : 0;
                v = t == DType::kQ4_0 ? u - 8 : t == DType::kQ5_0 ? u - 16 : u;
                uint8_t& byte = blk[qs_at + e % 16];
                const int nib = u & 15;
                byte =
                    e < 16 ? static_cast<uint8_t>((byte & 0xf0) | nib) : static_cast<uint8_t>((byte & 0x0f) | nib << 4);
                if (five) {
                  uint32_t qh;
                  std::memcpy(&qh, blk + qh_at, 4);
                  qh = (qh & ~(1u << e)) | static_cast<uint32_t>(u >> 4) << e;
                  std::memcpy(blk + qh_at, &qh, 4);
                }
              }
              wq[static_cast<size_t>(r * n + b * 32 + e)] = v;
            }
          }
        }
        p.w.resize(gguf.size());
        repack_rows_x16(t, gguf.data(), p.w.data(), rows, n);
        expect_exact_integer_sums(*g, p, wq);
      }
    }
  }
  if (!any) GTEST_SKIP() << "no ISA with quantized tile kernels on this CPU";
}

// For the Q2_K / Q3_K cases below: rows of 1024 and 1280 elements (a short
// last group) of 2 * quant_rows + 1 rows, each super-block b of row r
// zeroed and then written by fill(block, r, b, wq) with its 256 integer
// values in wq; repacked to x16 and checked by expect_exact_integer_sums.
template <typename Block, typename Fill>
void expect_k23_exact_sums(const GemmKernels& g, DType t, Fill fill) {
  for (int64_t n : {1024, 1280}) {
    SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
    const int64_t rows = 2 * g.quant_rows + 1, tokens = 2 * g.quant_tokens + 1, nb = n / kSuperBlockElems;
    Problem p{t, rows, tokens, n, {}, {}, {}, {}, dtype_row_bytes(t, n)};
    std::vector<uint8_t> gguf(p.w_row_bytes * static_cast<size_t>(rows), 0);
    std::vector<int32_t> wq(static_cast<size_t>(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < nb; ++b) {
        fill(reinterpret_cast<Block*>(gguf.data() + static_cast<size_t>(r) * p.w_row_bytes)[b], r, b,
             wq.data() + r * n + b * kSuperBlockElems);
      }
    }
    p.w.resize(gguf.size());
    repack_rows_x16(t, gguf.data(), p.w.data(), rows, n);
    expect_exact_integer_sums(g, p, wq);
  }
}
// Whether element e of super-block b of row r takes the high code.
bool k23_extreme_high(int64_t r, int64_t b, int e) {
  return r % 3 == 0 || ((r + b + e / 8) & 1) == 0;
}

// The same for the x16 super-block formats Q4_K, Q5_K (and Q3_K, Q2_K below): quants 0 / 15
// (Q4_K) and 0 / 31 (Q5_K) against activations ±127 and 0, with d = 1,
// dmin = 0 and every sub-block scale 1, so that each output is the exact
// integer sum. A Q5_K sub-block sum kept in s16 over more than four quant
// words (AVX2 without VNNI: 2 * 31 * 127 per word and lane) would wrap on
// the all-high rows against the all-positive tokens. Rows of 1024 and 1280
// elements (a short last group); every tile shape.
TEST(Gemm, ExtremeKQuantsGiveExactIntegerSums) {
  bool any = false;
  for (Isa isa : supported_isas()) {
    const GemmKernels* g = kernels_for(isa).gemm;
    if (g == nullptr) continue;
    SCOPED_TRACE(isa_label(isa));
    for (DType t : {DType::kQ4_K, DType::kQ5_K}) {
      if (!has_tile(*g, t)) continue;
      any = true;
      const bool five = t == DType::kQ5_K;
      const size_t qs_at = five ? offsetof(BlockQ5_K, qs) : offsetof(BlockQ4_K, qs);
      for (int64_t n : {1024, 1280}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
        const int64_t rows = 2 * g->quant_rows + 1, tokens = 2 * g->quant_tokens + 1, nb = n / kSuperBlockElems;
        Problem p{t, rows, tokens, n, {}, {}, {}, {}, dtype_row_bytes(t, n)};
        std::vector<uint8_t> gguf(p.w_row_bytes * static_cast<size_t>(rows), 0);
        std::vector<int32_t> wq(static_cast<size_t>(rows * n));  // the weights' integer values
        const uint16_t one = fp32_to_fp16(1.0f);
        const uint8_t sc[8] = {1, 1, 1, 1, 1, 1, 1, 1}, m[8] = {};
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t b = 0; b < nb; ++b) {
            uint8_t* blk = gguf.data() + static_cast<size_t>(r) * p.w_row_bytes + b * dtype_block_bytes(t);
            std::memcpy(blk, &one, 2);  // d = 1, dmin = 0
            pack_scale_min_k4(sc, m, blk + 4);
            for (int e = 0; e < kSuperBlockElems; ++e) {
              const bool high = r % 3 == 0 || ((r + b + e / 8) & 1) == 0;
              const int u = high ? (five ? 31 : 15) : 0;
              // Element e = 64c + 32h + l: nibble h of qs[32c + l]; Q5_K's bit 4 is bit e / 32 of qh[l].
              const int c = e / 64, h = e / 32 % 2, l = e % 32;
              uint8_t& byte = blk[qs_at + 32 * c + l];
              byte = static_cast<uint8_t>(byte | (u & 15) << (4 * h));
              if (five) blk[offsetof(BlockQ5_K, qh) + l] |= static_cast<uint8_t>((u >> 4) << (e / 32));
              wq[static_cast<size_t>(r * n + b * kSuperBlockElems + e)] = u;
            }
          }
        }
        p.w.resize(gguf.size());
        repack_rows_x16(t, gguf.data(), p.w.data(), rows, n);
        expect_exact_integer_sums(*g, p, wq);
      }
    }
    // Q3_K: codes u = 0 / 7 (q = -4 / 3), d = 1, every fourth sub-block's
    // scale at an end of its range (stored 0 / 63: -32 / +31), the others
    // +-1 (|y| < 2^24 then): a sub-block sum that wrapped in s16 or a scale
    // or offset taken from the wrong lane or sub-block would show.
    if (has_tile(*g, DType::kQ3_K)) {
      expect_k23_exact_sums<BlockQ3_K>(*g, DType::kQ3_K, [](BlockQ3_K& blk, int64_t r, int64_t b, int32_t* wq) {
        blk.d = fp32_to_fp16(1.0f);
        int sc[16];
        for (int j = 0; j < 16; ++j) {
          const bool odd = ((r + b + j / 4) & 1) != 0;
          sc[j] = j % 4 == 0 ? (odd ? 63 : 0) : (odd ? 33 : 31);
          // core/dtype.h: low 4 bits in scales[j % 8] (high nibble for j >= 8), high 2 in scales[8 + j % 4].
          blk.scales[j % 8] = static_cast<uint8_t>(blk.scales[j % 8] | (sc[j] & 15) << (j < 8 ? 0 : 4));
          blk.scales[8 + j % 4] = static_cast<uint8_t>(blk.scales[8 + j % 4] | (sc[j] >> 4) << (2 * (j / 4)));
        }
        for (int e = 0; e < kSuperBlockElems; ++e) {
          const int u = k23_extreme_high(r, b, e) ? 7 : 0;
          const int h = e / 128, c = e % 128 / 32, l = e % 32;
          blk.qs[32 * h + l] = static_cast<uint8_t>(blk.qs[32 * h + l] | (u & 3) << (2 * c));
          blk.hmask[l] = static_cast<uint8_t>(blk.hmask[l] | (u >> 2) << (4 * h + c));
          wq[e] = (sc[e / 16] - 32) * (u - 4);
        }
      });
    }
    // Q2_K: codes 0 / 3, d = dmin = 1, scales 1 / 15 and minima 0 / 15 by
    // sub-block: y = sum of sc * u * x - m * x, exact (|y| < 2^24).
    if (has_tile(*g, DType::kQ2_K)) {
      expect_k23_exact_sums<BlockQ2_K>(*g, DType::kQ2_K, [](BlockQ2_K& blk, int64_t r, int64_t b, int32_t* wq) {
        blk.d = blk.dmin = fp32_to_fp16(1.0f);
        for (int j = 0; j < 16; ++j) {
          const int sc = ((r + b + j) & 1) != 0 ? 15 : 1, m = ((r + j / 2) & 1) != 0 ? 15 : 0;
          blk.scales[j] = static_cast<uint8_t>(sc | m << 4);
        }
        for (int e = 0; e < kSuperBlockElems; ++e) {
          const int u = k23_extreme_high(r, b, e) ? 3 : 0;
          const int h = e / 128, c = e % 128 / 32, l = e % 32;
          blk.qs[32 * h + l] = static_cast<uint8_t>(blk.qs[32 * h + l] | u << (2 * c));
          const uint8_t sm = blk.scales[e / 16];
          wq[e] = (sm & 15) * u - (sm >> 4);
        }
      });
    }
  }
  if (!any) GTEST_SKIP() << "no ISA with Q4_K / Q5_K tile kernels on this CPU";
}

// The AVX-VNNI table (vpdpbusd) against the AVX2 table (vpmaddubsw /
// vpmaddwd) on the same weights and activations: every element of every
// quantized type and tile shape, and the decode form, bit for bit (the
// integer sums are the same exact integers, the float steps the same;
// gemm_avx2.inc). Random blocks and the extremes of the test above are both
// covered: rows of random weights and activations with ±127 runs. Where the
// CPU has no AVX-VNNI but AVX-512 VNNI (Zen 4, Ice Lake), the same AVX-VNNI
// code with the EVEX encoding of its vpdpbusd / vpdpwssd
// (avx_vnni_kernels_as_evex) stands in; with both, both run.
TEST(Gemm, AvxVnniTilesGiveTheAvx2Bits) {
  std::vector<std::pair<std::string, const GemmKernels*>> vnni;
  if (cpu_features().avx_vnni) vnni.emplace_back("avxvnni", kernels_for(Isa::kAvxVnni).gemm);
  if (cpu_features().avx512_vnni) vnni.emplace_back("avxvnni as evex", avx_vnni_kernels_as_evex().gemm);
  if (vnni.empty()) GTEST_SKIP() << "neither AVX-VNNI nor AVX-512 VNNI on this CPU";
  const GemmKernels& avx2 = *kernels_for(Isa::kAvx2).gemm;
  for (const auto& [label, table] : vnni) {
    SCOPED_TRACE(label);
    const GemmKernels& vn = *table;
    ASSERT_NE(&avx2, &vn);
    uint32_t seed = 900;
    for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1,
                    DType::kQ2_K, DType::kQ3_K, DType::kQ5_K}) {
      for (int64_t n : is_k_quant(t) ? std::vector<int64_t>{256, 1280, 2048} : std::vector<int64_t>{32, 544, 2048}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " n=" + std::to_string(n));
        Problem p = make_problem(t, 2 * vn.quant_rows + 1, 2 * vn.quant_tokens + 1, n, seed += 10);
        // Half the activation rows at the ends of their range.
        for (int64_t k = 0; k < p.tokens; k += 2) {
          for (int64_t i = 0; i < n; ++i) {
            p.x[static_cast<size_t>(k * n + i)] = ((k + i / 8) & 1) == 0 ? 127.0f : -127.0f;
          }
        }
        const Activations a = make_activations(avx2, p);
        const Activations b = make_activations(vn, p);
        const std::vector<float> want = run_with_shape(avx2, p, a, 1, 1);
        for (int tr = 1; tr <= vn.quant_rows; ++tr) {
          for (int tt = 1; tt <= vn.quant_tokens; ++tt) {
            const std::vector<float> y = run_with_shape(vn, p, b, tr, tt);
            ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float))) << "tile " << tr << "x" << tt;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu
