// AVX512-BF16 tile kernel for BF16 weights in the bf16 panel layout
// (weight_layout.h; gemm.h: pack_bf16, tile_bf16_dp). Compiled with
// TESSERA_AVX512_FLAGS and -mavx512bf16; only reached through
// kGemmAvx512Bf16, which avx512_kernels() picks when CPUID reports
// avx512_bf16.
//
// Per column pair k a tile of P panels × T tokens loads P weight vectors
// (pair k of 16 rows each), broadcasts each token's activation pair once and
// issues P·T vdpbf16ps: each lane accumulates one row's dot product with
// one token, so nothing is summed across lanes at the end and the result
// vector is 16 consecutive outputs. Against the row-major 4 × 6 tile of
// earlier rounds (a 16-lane partial sum per element, reduced at the end,
// four weight streams 4 KiB apart) this reads one sequential stream per
// panel and spends no instructions on reductions. Batch invariance as in
// gemm_avx512.cc: every element has its own accumulator and the same
// instruction sequence (pair 0, 1, ... in order) for any tile shape.
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

constexpr int kPanels = kBf16DpPanels;  // panels of 16 rows per tile
constexpr int kTokens = kBf16DpTokens;

template <int P, int T>
void tile(const uint16_t* w, int64_t panel_stride, const uint16_t* x, int64_t x_stride, int64_t n, float* y,
          int64_t y_stride, int64_t y_panel_stride) {
  const uint16_t* wp[P];  // P panels of [n / 2][16][2] bf16
  const uint32_t* xt[T];  // T packed rows, read as bf16 pairs
  for (int p = 0; p < P; ++p)
    wp[p] = reinterpret_cast<const uint16_t*>(reinterpret_cast<const char*>(w) + p * panel_stride);
  for (int t = 0; t < T; ++t)
    xt[t] = reinterpret_cast<const uint32_t*>(reinterpret_cast<const char*>(x) + t * x_stride);
  __m512 acc[P][T];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  }
  const int64_t pairs = n / 2;
  for (int64_t k = 0; k < pairs; ++k) {
    __m512bh wv[P];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) wv[p] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(wp[p] + 32 * k));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto xv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xt[t][k])));
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) acc[p][t] = _mm512_dpbf16_ps(acc[p][t], wv[p], xv);
    }
  }
  // Unrolled so that acc is only ever indexed by constants (gemm_avx512.cc).
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride + p * y_panel_stride, acc[p][t]);
  }
}

// A matrix's last panel when it holds h < 16 rows (weight_layout.h: pairs
// of h rows, 2h bf16 apart): the full tile's steps for one panel, each
// weight load and the store masked to h lanes.
template <int T>
void tile_part(const uint16_t* w, int h, const uint16_t* x, int64_t x_stride, int64_t n, float* y, int64_t y_stride) {
  const uint32_t* xt[T];  // T packed rows, read as bf16 pairs
  for (int t = 0; t < T; ++t)
    xt[t] = reinterpret_cast<const uint32_t*>(reinterpret_cast<const char*>(x) + t * x_stride);
  const auto wm = static_cast<__mmask32>((uint32_t{1} << (2 * h)) - 1u);
  const auto ym = static_cast<__mmask16>((1u << h) - 1u);
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const int64_t pairs = n / 2;
  for (int64_t k = 0; k < pairs; ++k) {
    const auto wv = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(wm, w + 2 * h * k));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto xv = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xt[t][k])));
      acc[t] = _mm512_dpbf16_ps(acc[t], wv, xv);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * y_stride, ym, acc[t]);
}

using Fn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, float*, int64_t, int64_t);

template <int P, int T>
struct Inst {
  static void run(const uint16_t* w, int64_t ws, const uint16_t* x, int64_t xs, int64_t n, float* y, int64_t ys,
                  int64_t yps) {
    tile<P, T>(w, ws, x, xs, n, y, ys, yps);
  }
};

constexpr ShapeTable<Fn, kPanels, kTokens, Inst> kTiles{};

using PartFn = void (*)(const uint16_t*, int, const uint16_t*, int64_t, int64_t, float*, int64_t);

template <int, int T>
struct PartInst {
  static void run(const uint16_t* w, int h, const uint16_t* x, int64_t xs, int64_t n, float* y, int64_t ys) {
    tile_part<T>(w, h, x, xs, n, y, ys);
  }
};

constexpr ShapeTable<PartFn, 1, kTokens, PartInst> kPartTiles{};

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

void tile_bf16_dp_avx512(const uint16_t* w, int64_t panel_stride, int panels, const uint16_t* x, int64_t xs, int tokens,
                         int64_t n, float* y, int64_t ys, int64_t yps) {
  kTiles.fn[panels - 1][tokens - 1](w, panel_stride, x, xs, n, y, ys, yps);
}

void tile_bf16_dp_part_avx512(const uint16_t* w, int rows, const uint16_t* x, int64_t xs, int tokens, int64_t n,
                              float* y, int64_t ys) {
  kPartTiles.fn[0][tokens - 1](w, rows, x, xs, n, y, ys);
}

}  // namespace tessera::cpu::detail
