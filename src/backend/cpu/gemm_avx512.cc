// AVX-512 + VNNI tile kernels (gemm.h). Compiled with TESSERA_AVX512_FLAGS and
// only reached through kernels_for() after the CPUID check.
//
// Every output element (row r, token t) owns one 16-lane f32 accumulator and
// sees the same instruction sequence for any tile shape: the R × T loops
// below only decide which loads are shared. Nothing here may reorder a
// reduction depending on R or T (batch invariance, see gemm.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernels_internal.h"

namespace tessera::cpu::detail {
namespace {

constexpr int kQuantRows = 4;
constexpr int kQuantTokens = 4;
constexpr int kFloatRows = 4;
constexpr int kFloatTokens = 6;

template <typename T>
const T* advance(const T* p, int64_t bytes) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(p) + bytes);
}

// ---- activation packing ---------------------------------------------------

void pack_q8x4(const float* x, PackedQ8x4Group* out, int64_t n, int32_t offset) {
  const int64_t nb = n / kQuantBlockElems;
  const int64_t groups = (nb + 3) / 4;
  BlockQ8_0 blk[4];
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t g = 0; g < groups; ++g) {
    const int have = static_cast<int>(nb - 4 * g < 4 ? nb - 4 * g : 4);
    avx512_kernels().quantize_row_q8_0(x + g * 4 * kQuantBlockElems, blk, int64_t{have} * kQuantBlockElems);
    PackedQ8x4Group& p = out[g];
    std::memset(&p, 0, sizeof(p));
    for (int k = 0; k < have; ++k) {
      std::memcpy(p.lo + 16 * k, blk[k].qs, 16);
      std::memcpy(p.hi + 16 * k, blk[k].qs + 16, 16);
      const float d = _cvtsh_ss(blk[k].d);
      for (int i = 0; i < 4; ++i) p.d[4 * k + i] = d;
    }
    // lane 4k+i: bytes 4i..4i+3 of block k's low and high halves (exact int32).
    const __m512i lo = _mm512_load_si512(p.lo), hi = _mm512_load_si512(p.hi);
    const __m512i s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, lo), ones, hi);
    _mm512_store_si512(p.offset_sum, _mm512_mullo_epi32(s, _mm512_set1_epi32(-offset)));
  }
}

// ---- quantized weights ----------------------------------------------------

// One group of (up to) four weight blocks in the packed activation's layout:
// `lo`/`hi` are unsigned bytes u with w = u - offset, `d` the block scales
// widened to lanes 4k..4k+3. Missing blocks of a tail group are zero quants
// with zero scale; their activation blocks are zero too, so they add an exact 0.
struct WeightGroup {
  __m512i lo, hi;
  __m512 d;
};

// Word-index tables for the group loaders below. A group of four blocks is
// loaded as a few unaligned 64-byte vectors inside the group's bytes (never
// past them) and its quants and scales are gathered with one 16-bit
// permute each (AVX512BW), instead of per-block loads and inserts.
struct GroupIndex {
  __m512i q4_qs, q4_d;
  __m512i q8_lo, q8_hi, q8_d;
};

GroupIndex make_group_index() {
  alignas(64) int16_t q4_qs[32], q4_d[32], q8_lo[32], q8_hi[32], q8_d[32];
  for (int m = 0; m < 32; ++m) {
    const int k = m / 8, i = m % 8;
    // Q4_0 (18-byte blocks, 36 words per group): A = words 0..31, B = words 4..35.
    const int w4 = 9 * k + 1 + i;
    q4_qs[m] = static_cast<int16_t>(w4 < 32 ? w4 : 32 + (w4 - 4));
    q4_d[m] = static_cast<int16_t>(9 * (m / 4 < 4 ? m / 4 : 0));
    // Q8_0 (34-byte blocks, 68 words per group): lo from A = words 0..31 and
    // B = 32..63; hi from X = words 4..35 and C = 36..67.
    q8_lo[m] = static_cast<int16_t>(17 * k + 1 + i);
    const int wh = 17 * k + 9 + i;
    q8_hi[m] = static_cast<int16_t>(wh < 36 ? wh - 4 : 32 + (wh - 36));
    q8_d[m] = static_cast<int16_t>(17 * (m / 4 < 4 ? m / 4 : 0));
  }
  auto load = [](const int16_t* v) { return _mm512_load_si512(v); };
  return {load(q4_qs), load(q4_d), load(q8_lo), load(q8_hi), load(q8_d)};
}

const GroupIndex& group_index() {
  static const GroupIndex idx = make_group_index();
  return idx;
}

__m512i load512(const void* p) {
  return _mm512_loadu_si512(p);
}
// f32 scales from the low 16 words of v (four f16 scales, each repeated 4 times).
__m512 widen_scales(__m512i v) {
  return _mm512_cvtph_ps(_mm512_castsi512_si256(v));
}

// Q8_0 weights: u = w + 128 (xor of the sign bit); the product's excess
// 128 * sum(x) is cancelled by the seed offset_sum (packed with kQ8Offset).
struct Q8Rows {
  using Block = BlockQ8_0;
  static WeightGroup load(const BlockQ8_0* w, const GroupIndex& ix) {
    const auto* p = reinterpret_cast<const uint8_t*>(w);  // 136 bytes
    const __m512i a = load512(p), b = load512(p + 64), x = load512(p + 8), c = load512(p + 72);
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    return {_mm512_xor_si512(_mm512_permutex2var_epi16(a, ix.q8_lo, b), bias),
            _mm512_xor_si512(_mm512_permutex2var_epi16(x, ix.q8_hi, c), bias),
            widen_scales(_mm512_permutex2var_epi16(a, ix.q8_d, b))};
  }
};

// Q4_0 weights: the nibbles are already u = w + 8; the seed offset_sum
// (packed with kQ4Offset) cancels 8 * sum(x). Low nibbles are elements 0..15, high nibbles 16..31.
struct Q4Rows {
  using Block = BlockQ4_0;
  static WeightGroup load(const BlockQ4_0* w, const GroupIndex& ix) {
    const auto* p = reinterpret_cast<const uint8_t*>(w);  // 72 bytes
    const __m512i a = load512(p), b = load512(p + 8);
    const __m512i q = _mm512_permutex2var_epi16(a, ix.q4_qs, b);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    return {_mm512_and_si512(q, m4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4),
            widen_scales(_mm512_permutexvar_epi16(ix.q4_d, a))};
  }
};

// A tail group of `have` < 4 blocks, copied so the loader never reads past the row.
template <typename Rows>
WeightGroup load_tail(const typename Rows::Block* w, int have, const GroupIndex& ix) {
  typename Rows::Block blk[4];
  std::memset(blk, 0, sizeof(blk));  // zero scale (f16 +0) and, for Q4_0, u = 0
  std::memcpy(blk, w, sizeof(blk[0]) * static_cast<size_t>(have));
  WeightGroup g = Rows::load(blk, ix);
  // The zeroed blocks decode to u = 128 (Q8_0) or u = 0 (Q4_0), not w = 0:
  // clear their lanes (their activation blocks are zero as well).
  const __mmask64 keep = (__mmask64{1} << (16 * have)) - 1;
  g.lo = _mm512_maskz_mov_epi8(keep, g.lo);
  g.hi = _mm512_maskz_mov_epi8(keep, g.hi);
  return g;
}

// The group step of one output: integer block sums seeded with the offset
// correction, then one convert and one FMA with d_w * d_x for four blocks.
inline __m512 group_fma(const WeightGroup& w, __m512i seed, __m512i xl, __m512i xh, __m512 dx, __m512 acc) {
  const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(seed, w.lo, xl), w.hi, xh);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(w.d, dx), acc);
}

template <typename Rows, int R, int T>
void tile_quant(const typename Rows::Block* w, int64_t w_stride, const PackedQ8x4Group* x, int64_t x_stride, int64_t n,
                float* y, int64_t y_stride) {
  const int64_t nb = n / kQuantBlockElems;
  const int64_t full = nb / 4;
  const int tail = static_cast<int>(nb % 4);
  const GroupIndex& ix = group_index();
  const typename Rows::Block* wr[R];
  const PackedQ8x4Group* xt[T];
  for (int r = 0; r < R; ++r) wr[r] = advance(w, r * w_stride);
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  // One loop for full and tail groups: a lambda or a second loop over acc
  // makes GCC keep the accumulators in memory.
  const int64_t groups = full + (tail != 0 ? 1 : 0);
  for (int64_t g = 0; g < groups; ++g) {
    WeightGroup wg[R];
    for (int r = 0; r < R; ++r) {
      wg[r] = g < full ? Rows::load(wr[r] + 4 * g, ix) : load_tail<Rows>(wr[r] + 4 * g, tail, ix);
    }
    for (int t = 0; t < T; ++t) {
      const PackedQ8x4Group& xg = xt[t][g];
      const __m512i seed = _mm512_load_si512(xg.offset_sum);
      const __m512i xl = _mm512_load_si512(xg.lo), xh = _mm512_load_si512(xg.hi);
      const __m512 dx = _mm512_load_ps(xg.d);
      for (int r = 0; r < R; ++r) acc[r][t] = group_fma(wg[r], seed, xl, xh, dx, acc[r][t]);
    }
  }
  // Unrolled so that acc is only ever indexed by constants: otherwise GCC
  // keeps the array in memory and stores every accumulator each iteration.
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// ---- float weights --------------------------------------------------------

__m512 load_w(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
__m512 load_w(const uint16_t* p, __mmask16 m, bool bf16) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

enum class FloatKind { kF32, kF16, kBF16 };

template <FloatKind K, typename WT>
__m512 load_weights(const WT* p, __mmask16 m) {
  if constexpr (K == FloatKind::kF32) {
    return load_w(p, m);
  } else {
    return load_w(p, m, K == FloatKind::kBF16);
  }
}

// 16 elements per step into one accumulator per output, a masked last step,
// then the fixed-order 16-lane reduction.
template <FloatKind K, int R, int T, typename WT>
void tile_float(const WT* w, int64_t w_stride, const float* x, int64_t x_stride, int64_t n, float* y,
                int64_t y_stride) {
  const WT* wr[R];
  const float* xt[T];
  for (int r = 0; r < R; ++r) wr[r] = advance(w, r * w_stride);
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = load_weights<K>(wr[r] + i, m);
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_maskz_loadu_ps(m, xt[t] + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  // Unrolled so that acc is only ever indexed by constants: otherwise GCC
  // keeps the array in memory and stores every accumulator each iteration.
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// ---- dispatch on the run-time tile shape ------------------------------------

// table[r - 1][t - 1] = Fn instantiated for (r, t).
template <typename Fn, int R, int T, template <int, int> class Inst>
struct ShapeTable {
  Fn fn[R][T];
  constexpr ShapeTable() : fn{} { fill<1>(); }
  template <int r>
  constexpr void fill() {
    if constexpr (r <= R) {
      fill_t<r, 1>();
      fill<r + 1>();
    }
  }
  template <int r, int t>
  constexpr void fill_t() {
    if constexpr (t <= T) {
      fn[r - 1][t - 1] = &Inst<r, t>::run;
      fill_t<r, t + 1>();
    }
  }
};

using QuantFn8 = void (*)(const BlockQ8_0*, int64_t, const PackedQ8x4Group*, int64_t, int64_t, float*, int64_t);
using QuantFn4 = void (*)(const BlockQ4_0*, int64_t, const PackedQ8x4Group*, int64_t, int64_t, float*, int64_t);
using FloatFn32 = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t);
using FloatFn16 = void (*)(const uint16_t*, int64_t, const float*, int64_t, int64_t, float*, int64_t);

template <int R, int T>
struct Q8Inst {
  static void run(const BlockQ8_0* w, int64_t ws, const PackedQ8x4Group* x, int64_t xs, int64_t n, float* y,
                  int64_t ys) {
    tile_quant<Q8Rows, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct Q4Inst {
  static void run(const BlockQ4_0* w, int64_t ws, const PackedQ8x4Group* x, int64_t xs, int64_t n, float* y,
                  int64_t ys) {
    tile_quant<Q4Rows, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct F32Inst {
  static void run(const float* w, int64_t ws, const float* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_float<FloatKind::kF32, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct F16Inst {
  static void run(const uint16_t* w, int64_t ws, const float* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_float<FloatKind::kF16, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct BF16Inst {
  static void run(const uint16_t* w, int64_t ws, const float* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_float<FloatKind::kBF16, R, T>(w, ws, x, xs, n, y, ys);
  }
};

constexpr ShapeTable<QuantFn8, kQuantRows, kQuantTokens, Q8Inst> kQ8Tiles{};
constexpr ShapeTable<QuantFn4, kQuantRows, kQuantTokens, Q4Inst> kQ4Tiles{};
constexpr ShapeTable<FloatFn32, kFloatRows, kFloatTokens, F32Inst> kF32Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, F16Inst> kF16Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, BF16Inst> kBF16Tiles{};

// One token against many rows, one row after another, each exactly the 1 x 1
// tile (inlined here, so decode pays no call per row).
template <typename Rows>
void rows_one_token(const typename Rows::Block* w, int64_t ws, int rows, const PackedQ8x4Group* x, int64_t n,
                    float* y) {
  for (int r = 0; r < rows; ++r) tile_quant<Rows, 1, 1>(advance(w, r * ws), ws, x, 0, n, y + r, 1);
}

void tile_q8_0(const BlockQ8_0* w, int64_t ws, int rows, const PackedQ8x4Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  if (tokens == 1 && rows > kQuantRows) return rows_one_token<Q8Rows>(w, ws, rows, x, n, y);
  kQ8Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_q4_0(const BlockQ4_0* w, int64_t ws, int rows, const PackedQ8x4Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  if (tokens == 1 && rows > kQuantRows) return rows_one_token<Q4Rows>(w, ws, rows, x, n, y);
  kQ4Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_f32(const float* w, int64_t ws, int rows, const float* x, int64_t xs, int tokens, int64_t n, float* y,
              int64_t ys) {
  kF32Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_f16(const uint16_t* w, int64_t ws, int rows, const float* x, int64_t xs, int tokens, int64_t n, float* y,
              int64_t ys) {
  kF16Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_bf16(const uint16_t* w, int64_t ws, int rows, const float* x, int64_t xs, int tokens, int64_t n, float* y,
               int64_t ys) {
  kBF16Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}

}  // namespace

const GemmKernels kGemmAvx512{
    .quant_rows = kQuantRows,
    .quant_tokens = kQuantTokens,
    .float_rows = kFloatRows,
    .float_tokens = kFloatTokens,
    .pack_q8x4 = pack_q8x4,
    .tile_q8_0 = tile_q8_0,
    .tile_q4_0 = tile_q4_0,
    .tile_f32 = tile_f32,
    .tile_f16 = tile_f16,
    .tile_bf16 = tile_bf16,
};

}  // namespace tessera::cpu::detail
