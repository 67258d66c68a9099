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

__m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}
__m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The four f16 scales of blocks w[0..3] widened to lanes 4k..4k+3, packed in
// general-purpose registers first (keeps the vector ports, the decode
// bottleneck, for the products).
template <typename Block>
__m512 gpr_scales(const Block* w) {
  const uint64_t bits = uint64_t{w[0].d} | uint64_t{w[1].d} << 16 | uint64_t{w[2].d} << 32 | uint64_t{w[3].d} << 48;
  const __m128 d4 = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(bits)));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                               _mm512_castps128_ps512(d4));
}

// Q8_0 weights: u = w + 128 (xor of the sign bit); the product's excess
// 128 * sum(x) is cancelled by the seed offset_sum (packed with kQ8Offset).
struct Q8Rows {
  using Block = BlockQ8_0;
  static WeightGroup load(const BlockQ8_0* w) {
    const __m512i z01 = _mm512_inserti64x4(_mm512_castsi256_si512(load256(w[0].qs)), load256(w[1].qs), 1);
    const __m512i z23 = _mm512_inserti64x4(_mm512_castsi256_si512(load256(w[2].qs)), load256(w[3].qs), 1);
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    return {_mm512_xor_si512(_mm512_shuffle_i64x2(z01, z23, _MM_SHUFFLE(2, 0, 2, 0)), bias),
            _mm512_xor_si512(_mm512_shuffle_i64x2(z01, z23, _MM_SHUFFLE(3, 1, 3, 1)), bias), gpr_scales(w)};
  }
};

// Q4_0 weights: the nibbles are already u = w + 8; the seed offset_sum
// (packed with kQ4Offset) cancels 8 * sum(x). Low nibbles are elements 0..15, high nibbles 16..31.
struct Q4Rows {
  using Block = BlockQ4_0;
  static WeightGroup load(const BlockQ4_0* w) {
    __m512i q = _mm512_castsi128_si512(load128(w[0].qs));
    q = _mm512_inserti32x4(q, load128(w[1].qs), 1);
    q = _mm512_inserti32x4(q, load128(w[2].qs), 2);
    q = _mm512_inserti32x4(q, load128(w[3].qs), 3);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    return {_mm512_and_si512(q, m4), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4), gpr_scales(w)};
  }
};

// A tail group of `have` < 4 blocks, copied so the loader never reads past the row.
template <typename Rows>
WeightGroup load_tail(const typename Rows::Block* w, int have) {
  typename Rows::Block blk[4];
  std::memset(blk, 0, sizeof(blk));  // zero scale (f16 +0) and, for Q4_0, u = 0
  std::memcpy(blk, w, sizeof(blk[0]) * static_cast<size_t>(have));
  WeightGroup g = Rows::load(blk);
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
      wg[r] = g < full ? Rows::load(wr[r] + 4 * g) : load_tail<Rows>(wr[r] + 4 * g, tail);
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

void tile_q8_0(const BlockQ8_0* w, int64_t ws, int rows, const PackedQ8x4Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  kQ8Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_q4_0(const BlockQ4_0* w, int64_t ws, int rows, const PackedQ8x4Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
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
