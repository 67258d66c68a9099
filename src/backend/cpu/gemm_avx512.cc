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

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/gemm.h"
#include "backend/cpu/kernels_internal.h"
#include "backend/cpu/weight_layout.h"

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

void pack_q8x16(const float* x, PackedQ8x16Group* out, int64_t n, int32_t offset) {
  const int64_t nb = n / kQuantBlockElems;
  const int64_t groups = (nb + kX16Blocks - 1) / kX16Blocks;
  BlockQ8_0 blk[kX16Blocks];
  for (int64_t g = 0; g < groups; ++g) {
    const int have = static_cast<int>(std::min<int64_t>(kX16Blocks, nb - g * kX16Blocks));
    avx512_kernels().quantize_row_q8_0(x + g * kX16Blocks * kQuantBlockElems, blk, int64_t{have} * kQuantBlockElems);
    PackedQ8x16Group& p = out[g];
    std::memset(&p, 0, sizeof(p));
    for (int b = 0; b < have; ++b) {
      int32_t sum = 0;
      for (int k = 0; k < 8; ++k) {
        std::memcpy(&p.q[k][4 * b], blk[b].qs + 4 * k, 4);
        for (int i = 0; i < 4; ++i) sum += blk[b].qs[4 * k + i];
      }
      p.d[b] = _cvtsh_ss(blk[b].d);
      p.offset_sum[b] = -offset * sum;
    }
  }
}

// ---- quantized weights (x16 layout, weight_layout.h) ------------------------

// One group of `lanes` blocks of one weight row: the scales widened to f32
// and the quant words (lanes past `lanes` zero).
template <int kWords>
struct WeightGroup {
  __m512 d;
  __m512i words[kWords];
};

template <int kWords, int kBlockBytes>
WeightGroup<kWords> load_group(const uint8_t* p, int lanes) {
  WeightGroup<kWords> g;
  if (lanes == kX16Blocks) {
    g.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    for (int k = 0; k < kWords; ++k) g.words[k] = _mm512_loadu_si512(p + 32 + 64 * k);
  } else {
    const auto m = static_cast<__mmask16>((1u << lanes) - 1u);
    g.d = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    for (int k = 0; k < kWords; ++k) g.words[k] = _mm512_maskz_loadu_epi32(m, p + 2 * lanes + 4 * lanes * k);
  }
  return g;
}

// Q8_0: u = w + 128 (xor of the sign bit); the excess 128 * sum(x) is
// cancelled by the seed offset_sum (packed with kQ8Offset). Zero lanes of a
// short group become u = 128 against x = 0: an exact 0.
struct Q8Rows {
  static constexpr int kWords = 8;
  static constexpr int kBlockBytes = sizeof(BlockQ8_0);
  static __m512i dot(const WeightGroup<kWords>& w, const PackedQ8x16Group& x) {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    __m512i acc = _mm512_load_si512(x.offset_sum);
    for (int k = 0; k < kWords; ++k) {
      acc = _mm512_dpbusd_epi32(acc, _mm512_xor_si512(w.words[k], bias), _mm512_load_si512(x.q[k]));
    }
    return acc;
  }
};

// Q4_0: the nibbles are already u = w + 8 (low nibble of byte j: element j,
// high: element 16 + j); the seed (packed with kQ4Offset) cancels 8 * sum(x).
struct Q4Rows {
  static constexpr int kWords = 4;
  static constexpr int kBlockBytes = sizeof(BlockQ4_0);
  static __m512i dot(const WeightGroup<kWords>& w, const PackedQ8x16Group& x) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i acc = _mm512_load_si512(x.offset_sum);
    for (int k = 0; k < kWords; ++k) {
      acc = _mm512_dpbusd_epi32(acc, _mm512_and_si512(w.words[k], m4), _mm512_load_si512(x.q[k]));
      acc = _mm512_dpbusd_epi32(acc, _mm512_and_si512(_mm512_srli_epi16(w.words[k], 4), m4),
                                _mm512_load_si512(x.q[k + 4]));
    }
    return acc;
  }
};

// Per element and group: the exact integer dot product of each of the 16
// blocks in its own lane, then one convert and one FMA with d_w * d_x.
template <typename Rows, int R, int T>
void tile_quant(const uint8_t* w, int64_t w_stride, const PackedQ8x16Group* x, int64_t x_stride, int64_t n, float* y,
                int64_t y_stride) {
  const int64_t nb = n / kQuantBlockElems;
  const int64_t groups = (nb + kX16Blocks - 1) / kX16Blocks;
  const PackedQ8x16Group* xt[T];
  for (int t = 0; t < T; ++t) xt[t] = advance(x, t * x_stride);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    const int lanes = static_cast<int>(std::min<int64_t>(kX16Blocks, nb - g * kX16Blocks));
    const size_t offset = static_cast<size_t>(g) * kX16Blocks * Rows::kBlockBytes;
    for (int r = 0; r < R; ++r) {
      const auto wg = load_group<Rows::kWords, Rows::kBlockBytes>(w + r * w_stride + offset, lanes);
      for (int t = 0; t < T; ++t) {
        const PackedQ8x16Group& xg = xt[t][g];
        const __m512 scale = _mm512_mul_ps(wg.d, _mm512_load_ps(xg.d));
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(Rows::dot(wg, xg)), scale, acc[r][t]);
      }
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

using QuantFn = void (*)(const uint8_t*, int64_t, const PackedQ8x16Group*, int64_t, int64_t, float*, int64_t);
using FloatFn32 = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t);
using FloatFn16 = void (*)(const uint16_t*, int64_t, const float*, int64_t, int64_t, float*, int64_t);

template <int R, int T>
struct Q8Inst {
  static void run(const uint8_t* w, int64_t ws, const PackedQ8x16Group* x, int64_t xs, int64_t n, float* y,
                  int64_t ys) {
    tile_quant<Q8Rows, R, T>(w, ws, x, xs, n, y, ys);
  }
};
template <int R, int T>
struct Q4Inst {
  static void run(const uint8_t* w, int64_t ws, const PackedQ8x16Group* x, int64_t xs, int64_t n, float* y,
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

constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, Q8Inst> kQ8Tiles{};
constexpr ShapeTable<QuantFn, kQuantRows, kQuantTokens, Q4Inst> kQ4Tiles{};
constexpr ShapeTable<FloatFn32, kFloatRows, kFloatTokens, F32Inst> kF32Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, F16Inst> kF16Tiles{};
constexpr ShapeTable<FloatFn16, kFloatRows, kFloatTokens, BF16Inst> kBF16Tiles{};

void tile_q8_0(const uint8_t* w, int64_t ws, int rows, const PackedQ8x16Group* x, int64_t xs, int tokens, int64_t n,
               float* y, int64_t ys) {
  kQ8Tiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}
void tile_q4_0(const uint8_t* w, int64_t ws, int rows, const PackedQ8x16Group* x, int64_t xs, int tokens, int64_t n,
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
    .pack_q8x16 = pack_q8x16,
    .tile_q8_0 = tile_q8_0,
    .tile_q4_0 = tile_q4_0,
    .tile_f32 = tile_f32,
    .tile_f16 = tile_f16,
    .tile_bf16 = tile_bf16,
};

}  // namespace tessera::cpu::detail
