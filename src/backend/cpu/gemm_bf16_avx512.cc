// AVX512-BF16 tile kernel for BF16 weights (gemm.h: pack_bf16,
// tile_bf16_dp). Compiled with TESSERA_AVX512_FLAGS and -mavx512bf16; only
// reached through kGemmAvx512Bf16, which avx512_kernels() picks when CPUID
// reports avx512_bf16.
//
// Against tile_bf16 (bf16 widened to f32, one FMA per 16 products, f32
// activations) this does twice the products per instruction, converts
// nothing inside the loop and reads half the activation bytes: a 6-token
// tile of 2048-element rows is 24 KiB of bf16 and stays in L1 while the
// weight rows stream from L2. Batch invariance as in gemm_avx512.cc: every
// element has its own accumulator and the same instruction sequence for any
// tile shape.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_shape_table.h"
#include "backend/cpu/kernels_internal.h"

namespace tessera::cpu::detail {
namespace {

constexpr int kRows = 4;
constexpr int kTokens = 6;

__mmask32 tail_mask(int64_t left) {
  return left >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << left) - 1u);
}

// The 16-lane sum in the fixed order of dot_bf16_dp_ref: lanes j and j + 8,
// then j + 4, j + 2, j + 1.
float reduce16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

template <int R, int T>
void tile(const uint16_t* w, int64_t w_stride, const uint16_t* x, int64_t x_stride, int64_t n, float* y,
          int64_t y_stride) {
  const uint16_t* wr[R];  // R rows of [n] bf16
  const uint16_t* xt[T];  // T rows of [packed_bf16_row_elems(n)] bf16
  for (int r = 0; r < R; ++r)
    wr[r] = reinterpret_cast<const uint16_t*>(reinterpret_cast<const char*>(w) + r * w_stride);
  for (int t = 0; t < T; ++t)
    xt[t] = reinterpret_cast<const uint16_t*>(reinterpret_cast<const char*>(x) + t * x_stride);
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  // Plain loads in the main loop, the masked load only in the tail: a
  // run-time mask on every load halved the one-token tile's speed on Zen 5
  // (gemm_avx512.cc tile_float); an all-ones masked load is the plain load,
  // so the bits are the same. The packed activation row is zero past n: no
  // mask on it.
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512bh wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wr[r] + i));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto xv = reinterpret_cast<__m512bh>(_mm512_load_si512(xt[t] + i));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], xv);
    }
  }
  if (i < n) {
    const __mmask32 m = tail_mask(n - i);
    __m512bh wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, wr[r] + i));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto xv = reinterpret_cast<__m512bh>(_mm512_load_si512(xt[t] + i));
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], xv);
    }
  }
  // Unrolled so that acc is only ever indexed by constants (gemm_avx512.cc).
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = reduce16(acc[r][t]);
  }
}

using Fn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, float*, int64_t);

template <int R, int T>
struct Inst {
  static void run(const uint16_t* w, int64_t ws, const uint16_t* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile<R, T>(w, ws, x, xs, n, y, ys);
  }
};

constexpr ShapeTable<Fn, kRows, kTokens, Inst> kTiles{};

}  // namespace

void pack_bf16_avx512(const float* x, uint16_t* out, int64_t n) {
  const int64_t padded = packed_bf16_row_elems(n);
  for (int64_t i = 0; i < padded; i += 32) {
    auto mask = [&](int64_t from) {
      const int64_t left = n - from;
      return left >= 16 ? __mmask16{0xffff} : left <= 0 ? __mmask16{0} : static_cast<__mmask16>((1u << left) - 1u);
    };
    const __m512 lo = _mm512_maskz_loadu_ps(mask(i), x + i);
    const __m512 hi = _mm512_maskz_loadu_ps(mask(i + 16), x + i + 16);
    _mm512_store_si512(out + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
}

void tile_bf16_dp_avx512(const uint16_t* w, int64_t ws, int rows, const uint16_t* x, int64_t xs, int tokens, int64_t n,
                         float* y, int64_t ys) {
  kTiles.fn[rows - 1][tokens - 1](w, ws, x, xs, n, y, ys);
}

static_assert(kRows == 4 && kTokens == 6, "tile_bf16_dp shares float_rows x float_tokens with kGemmAvx512");

}  // namespace tessera::cpu::detail
