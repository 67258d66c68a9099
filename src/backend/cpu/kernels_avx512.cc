// AVX-512 (F/BW/VL/DQ) + VNNI kernels. Compiled with TESSERA_AVX512_FLAGS and
// only entered after cpu_features() reports AVX-512 with VNNI; internal
// linkage throughout for the same reason as kernels_avx2.cc.
// GCC 12's AVX-512 headers build undefined vectors as `__m512 __Y = __Y;`,
// which -Wuninitialized reports at every inlined use (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/kernels_internal.h"
#include "core/cpu_features.h"
#include "core/dtype.h"

namespace tessera::cpu::detail {
namespace {

float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

// Round to nearest even, as fp32_to_fp16 (_cvtss_sh is a compound-literal
// macro under Clang, which -Wpedantic rejects in C++).
uint16_t float_to_half(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

// Mask of the first `rem` lanes (rem may exceed 16).
__mmask16 tail_mask(int64_t rem) {
  return rem >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << rem) - 1u);
}

__m512 load_f32(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
__m512 load_f16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
__m512 load_bf16(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

template <typename T>
const T* row_at(const T* w, int64_t row_stride, int r) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(w) + r * row_stride);
}

// R weight rows against one activation row. Each row keeps its own four
// accumulators over 64-element steps, and the tail uses masked loads (masked
// lanes read nothing, so no over-read). R = 1 is the single-row dot; for
// R > 1 every row goes through exactly the same instruction sequence, only
// the x loads are shared, so the results are bit-identical to R = 1.
template <int R, typename T, typename LoadW>
void dot_rows_float(const T* w, int64_t row_stride, const float* x, int64_t n, float* out, LoadW load_w) {
  const __mmask16 all = 0xffff;
  const T* wr[R];
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r) {
    wr[r] = row_at(w, row_stride, r);
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 xv[4];
    for (int j = 0; j < 4; ++j) xv[j] = _mm512_loadu_ps(x + i + 16 * j);
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_fmadd_ps(load_w(wr[r] + i + 16 * j, all), xv[j], acc[r][j]);
    }
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 xv = load_f32(x + i, m);
    for (int r = 0; r < R; ++r) acc[r][0] = _mm512_fmadd_ps(load_w(wr[r] + i, m), xv, acc[r][0]);
  }
  for (int r = 0; r < R; ++r) {
    out[r] =
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3])));
  }
}

float dot_f32(const float* w, const float* x, int64_t n) {
  float out;
  dot_rows_float<1>(w, 0, x, n, &out, load_f32);
  return out;
}
float dot_f16(const uint16_t* w, const float* x, int64_t n) {
  float out;
  dot_rows_float<1>(w, 0, x, n, &out, load_f16);
  return out;
}
float dot_bf16(const uint16_t* w, const float* x, int64_t n) {
  float out;
  dot_rows_float<1>(w, 0, x, n, &out, load_bf16);
  return out;
}
void dot_rows_f32(const float* w, int64_t s, const float* x, int64_t n, float* out) {
  dot_rows_float<kDotRows>(w, s, x, n, out, load_f32);
}
void dot_rows_f16(const uint16_t* w, int64_t s, const float* x, int64_t n, float* out) {
  dot_rows_float<kDotRows>(w, s, x, n, out, load_f16);
}
void dot_rows_bf16(const uint16_t* w, int64_t s, const float* x, int64_t n, float* out) {
  dot_rows_float<kDotRows>(w, s, x, n, out, load_bf16);
}

__m256i load_q8(const int8_t* qs) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
}

#include "backend/cpu/hsum_ps.inc"

// Per-block int32 lane sums (lane j = products 4j..4j+3, exact) for Q8_0
// weights: vpdpbusd multiplies unsigned by signed bytes, so the weight's sign
// moves onto x: |w| * (x * sign(w)). 256-bit VNNI matches a block's 32 quants;
// Zen 4 splits 512-bit ops into halves anyway.
struct Q8Weights {
  static __m256i lanes(const BlockQ8_0& w, __m256i xv, __m256i /*x_sum8*/) {
    const __m256i wv = load_q8(w.qs);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
  }
};

// Q4_0: the nibbles u in 0..15 are already unsigned, so sum (u - 8) * x =
// dpbusd(u, x) - dpbusd(8, x); the second term depends only on x and is
// shared between rows. Integer arithmetic, so the lanes are exact.
struct Q4Weights {
  static __m256i lanes(const BlockQ4_0& w, __m256i xv, __m256i x_sum8) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
    const __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, xv), x_sum8);
  }
};

// f32 values of the f16 scales of blocks b..b+3 in one conversion. The four
// 16-bit fields are packed in general-purpose registers, which keeps the
// vector ports (the bottleneck here) free for the products.
template <typename Block>
__m128 scales4(const Block* blk) {
  const uint64_t lo = uint64_t{blk[0].d} | uint64_t{blk[1].d} << 16;
  const uint64_t hi = uint64_t{blk[2].d} | uint64_t{blk[3].d} << 16;
  return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(lo | hi << 32)));
}

// R weight rows against one Q8_0 activation row; per row four accumulators
// over 4-block steps, block j adding lanes * (d_w * d_x) to accumulator j.
// The scale products are the same IEEE multiplies whether done four at a
// time or one by one (tail), and R > 1 shares only the x loads and x-scale
// conversions, so every R gives bit-identical results.
template <int R, typename Weights, typename Block>
void dot_rows_quant(const Block* w, int64_t row_stride, const BlockQ8_0* x, int64_t n, float* out) {
  const int64_t nb = n / kQuantBlockElems;
  const Block* wr[R];
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r) {
    wr[r] = row_at(w, row_stride, r);
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const __m128 dx = scales4(x + b);
    __m256 d[R];  // [d_w * d_x of blocks b..b+3] twice
    for (int r = 0; r < R; ++r) {
      const __m128 d4 = _mm_mul_ps(scales4(wr[r] + b), dx);
      d[r] = _mm256_set_m128(d4, d4);
    }
    for (int j = 0; j < 4; ++j) {
      const __m256i xv = load_q8(x[b + j].qs);
      const __m256i x_sum8 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), xv);
      const __m256i sel = _mm256_set1_epi32(j);
      for (int r = 0; r < R; ++r) {
        const __m256 dj = _mm256_permutevar8x32_ps(d[r], sel);
        acc[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Weights::lanes(wr[r][b + j], xv, x_sum8)), dj, acc[r][j]);
      }
    }
  }
  for (; b < nb; ++b) {
    const __m256i xv = load_q8(x[b].qs);
    const __m256i x_sum8 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), xv);
    const float dx = half_to_float(x[b].d);
    for (int r = 0; r < R; ++r) {
      const __m256 d = _mm256_set1_ps(half_to_float(wr[r][b].d) * dx);
      acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Weights::lanes(wr[r][b], xv, x_sum8)), d, acc[r][0]);
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
  }
}

// Q4_0 with 512-bit VNNI, four blocks per vector. The x side of a 4-block
// group (shared by all R rows) is rearranged once into xl = elements 0..15 of
// blocks b..b+3 and xh = elements 16..31, matching the weight nibbles
// u_lo = qs & 15 and u_hi = qs >> 4 of the four blocks side by side, so no
// per-block nibble interleave is needed. -8 * sum(x) (the Q4_0 offset) seeds
// the integer accumulator; lanes 4k..4k+3 then hold block k's exact sum of
// (q - 8) * x. One cvt + one FMA with the broadcast d_w * d_x covers four
// blocks. Groups alternate between two accumulators; a tail of < 4 blocks
// goes through 256-bit code into a third. Every row runs the same
// instruction sequence whatever R is, so R > 1 is bit-identical to R = 1.
struct Q4Group {
  __m512i xl, xh, nx8;  // x elements 0..15 / 16..31 of four blocks; -8 * sum(x) lanes
  __m128 dx;            // f32 scales of the four x blocks
};

inline Q4Group q4_group_x(const BlockQ8_0* x) {
  const __m512i z01 = _mm512_inserti64x4(_mm512_castsi256_si512(load_q8(x[0].qs)), load_q8(x[1].qs), 1);
  const __m512i z23 = _mm512_inserti64x4(_mm512_castsi256_si512(load_q8(x[2].qs)), load_q8(x[3].qs), 1);
  Q4Group g;
  g.xl = _mm512_shuffle_i64x2(z01, z23, _MM_SHUFFLE(2, 0, 2, 0));
  g.xh = _mm512_shuffle_i64x2(z01, z23, _MM_SHUFFLE(3, 1, 3, 1));
  const __m512i eight = _mm512_set1_epi8(8);
  g.nx8 = _mm512_sub_epi32(_mm512_setzero_si512(),
                           _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, g.xl), eight, g.xh));
  g.dx = scales4(x);
  return g;
}

inline __m512 q4_group_fma(const BlockQ4_0* w, const Q4Group& g, __m512 acc) {
  __m512i q = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[0].qs)));
  q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[1].qs)), 1);
  q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[2].qs)), 2);
  q = _mm512_inserti32x4(q, _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[3].qs)), 3);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i ul = _mm512_and_si512(q, m4);
  const __m512i uh = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
  const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(g.nx8, ul, g.xl), uh, g.xh);
  const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512 d = _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_mul_ps(scales4(w), g.dx)));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, acc);
}

template <int R>
void dot_rows_q4_0_impl(const BlockQ4_0* w, int64_t row_stride, const BlockQ8_0* x, int64_t n, float* out) {
  const int64_t nb = n / kQuantBlockElems;
  const BlockQ4_0* wr[R];
  __m512 acc0[R], acc1[R];
  __m256 acct[R];
  for (int r = 0; r < R; ++r) {
    wr[r] = row_at(w, row_stride, r);
    acc0[r] = _mm512_setzero_ps();
    acc1[r] = _mm512_setzero_ps();
    acct[r] = _mm256_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 8 <= nb; b += 8) {
    const Q4Group g0 = q4_group_x(x + b);
    const Q4Group g1 = q4_group_x(x + b + 4);
    for (int r = 0; r < R; ++r) {
      acc0[r] = q4_group_fma(wr[r] + b, g0, acc0[r]);
      acc1[r] = q4_group_fma(wr[r] + b + 4, g1, acc1[r]);
    }
  }
  if (b + 4 <= nb) {
    const Q4Group g0 = q4_group_x(x + b);
    for (int r = 0; r < R; ++r) acc0[r] = q4_group_fma(wr[r] + b, g0, acc0[r]);
    b += 4;
  }
  for (; b < nb; ++b) {
    const __m256i xv = load_q8(x[b].qs);
    const __m256i x_sum8 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), xv);
    const float dx = half_to_float(x[b].d);
    for (int r = 0; r < R; ++r) {
      const __m256 d = _mm256_set1_ps(half_to_float(wr[r][b].d) * dx);
      acct[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Q4Weights::lanes(wr[r][b], xv, x_sum8)), d, acct[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[r], acc1[r])) + hsum_ps(acct[r]);
  }
}

float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n) {
  float out;
  dot_rows_quant<1, Q8Weights>(w, 0, x, n, &out);
  return out;
}
float dot_q4_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n) {
  float out;
  dot_rows_q4_0_impl<1>(w, 0, x, n, &out);
  return out;
}
void dot_rows_q8_0(const BlockQ8_0* w, int64_t s, const BlockQ8_0* x, int64_t n, float* out) {
  dot_rows_quant<kDotRows, Q8Weights>(w, s, x, n, out);
}
void dot_rows_q4_0(const BlockQ4_0* w, int64_t s, const BlockQ8_0* x, int64_t n, float* out) {
  dot_rows_q4_0_impl<kDotRows>(w, s, x, n, out);
}

// lround semantics (half away from zero): the fraction v - trunc(v) is exact,
// so the comparison with 0.5 decides exactly as lround does.
__m512i round_half_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
  const __m512 step = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));
  const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, step));
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* xb = x + b * kQuantBlockElems;
    const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_half(d);
    const __m512 vid = _mm512_set1_ps(id);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs),
                     _mm512_cvtepi32_epi8(round_half_away(_mm512_mul_ps(v0, vid))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16),
                     _mm512_cvtepi32_epi8(round_half_away(_mm512_mul_ps(v1, vid))));
  }
}

void axpy_f16(float a, const uint16_t* v, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, load_f16(v + i, m), load_f32(y + i, m)));
  }
}

// Heads h0..h0+H-1 of attn_pv_f16, 64 elements (4 vectors) of hd at a time:
// 4H accumulators stay in registers over all n positions (every block).
template <int H, typename Rows>
void attn_pv_heads(const float* p, int64_t p_stride, const typename Rows::Elem* const* v, int64_t v_rows,
                   int64_t v_stride, int n, float* out, int64_t out_stride, int64_t hd, const float* rescale) {
  for (int64_t i0 = 0; i0 < hd; i0 += 64) {
    __mmask16 m[4];
    for (int c = 0; c < 4; ++c) m[c] = tail_mask(hd - i0 - 16 * c > 0 ? hd - i0 - 16 * c : 0);
    __m512 acc[H][4];
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < 4; ++c) acc[h][c] = load_f32(out + h * out_stride + i0 + 16 * c, m[c]);
      if (rescale != nullptr) {
        const __m512 r = _mm512_set1_ps(rescale[h]);
        for (int c = 0; c < 4; ++c) acc[h][c] = _mm512_mul_ps(acc[h][c], r);
      }
    }
    for (int j0 = 0, b = 0; j0 < n; j0 += static_cast<int>(v_rows), ++b) {
      const int j1 = n - j0 < v_rows ? n : j0 + static_cast<int>(v_rows);
      const auto* vrow = reinterpret_cast<const char*>(v[b]);
      for (int j = j0; j < j1; ++j, vrow += v_stride) {
        __m512 vv[4];
        for (int c = 0; c < 4; ++c)
          vv[c] = Rows::load(reinterpret_cast<const typename Rows::Elem*>(vrow) + i0 + 16 * c, m[c]);
        for (int h = 0; h < H; ++h) {
          const __m512 ph = _mm512_set1_ps(p[h * p_stride + j]);
          for (int c = 0; c < 4; ++c) acc[h][c] = _mm512_fmadd_ps(ph, vv[c], acc[h][c]);
        }
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(out + h * out_stride + i0 + 16 * c, m[c], acc[h][c]);
    }
  }
}

template <typename Rows>
void attn_pv_rows(const float* p, int64_t p_stride, int heads, const typename Rows::Elem* const* v, int64_t v_rows,
                  int64_t v_stride, int n, float* out, int64_t out_stride, int64_t hd, const float* rescale) {
  auto r = [&](int h) { return rescale != nullptr ? rescale + h : nullptr; };
  int h = 0;
  for (; h + 4 <= heads; h += 4)
    attn_pv_heads<4, Rows>(p + h * p_stride, p_stride, v, v_rows, v_stride, n, out + h * out_stride, out_stride, hd,
                           r(h));
  switch (heads - h) {
    case 3:
      return attn_pv_heads<3, Rows>(p + h * p_stride, p_stride, v, v_rows, v_stride, n, out + h * out_stride,
                                    out_stride, hd, r(h));
    case 2:
      return attn_pv_heads<2, Rows>(p + h * p_stride, p_stride, v, v_rows, v_stride, n, out + h * out_stride,
                                    out_stride, hd, r(h));
    case 1:
      return attn_pv_heads<1, Rows>(p + h * p_stride, p_stride, v, v_rows, v_stride, n, out + h * out_stride,
                                    out_stride, hd, r(h));
    default:
      return;
  }
}

// Lane j of the result = a[j]'s 16 lanes combined by op: a transposed tree
// (lanes i and i + 8, then i + 4, i + 2, i + 1, as _mm512_reduce_add_ps pairs
// them), 15 ops for 16 results instead of 16 separate reductions. With
// _mm512_add_ps each lane has _mm512_reduce_add_ps's bits. Inlined, so that
// a caller's 16 vectors stay in registers (as a call they went through the
// stack: 15% of a 4k-context decode's attention samples).
template <typename Op>
[[gnu::always_inline]] inline __m512 reduce16_with(const __m512 (&a)[16], Op op) {
  __m512 b[8], c[4], d[2];
  for (int j = 0; j < 8; ++j) {  // 128-bit lanes: a_j (i + 8 folded) twice, then a_{j+8}
    b[j] = op(_mm512_shuffle_f32x4(a[j], a[j + 8], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_f32x4(a[j], a[j + 8], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  for (int j = 0; j < 4; ++j) {  // lanes of a_j, a_{j+8}, a_{j+4}, a_{j+12}
    c[j] = op(_mm512_shuffle_f32x4(b[j], b[j + 4], _MM_SHUFFLE(2, 0, 2, 0)),
              _mm512_shuffle_f32x4(b[j], b[j + 4], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (int j = 0; j < 2; ++j) {
    d[j] = op(_mm512_shuffle_ps(c[j], c[j + 2], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_ps(c[j], c[j + 2], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  const __m512 e = op(_mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(2, 0, 2, 0)),
                      _mm512_shuffle_ps(d[0], d[1], _MM_SHUFFLE(3, 1, 3, 1)));
  // e holds, per 128-bit lane L, the results of a_{m + o_L} for m = 0, 2, 1, 3
  // (o = 0, 8, 4, 12): put result j in lane j.
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15), e);
}
[[gnu::always_inline]] inline __m512 reduce16(const __m512 (&a)[16]) {
  return reduce16_with(a, [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); });
}

// 16 key or value row elements widened to f32 (one masked vector): the
// key scores' and P·V's loads.
template <__m512 (*Load)(const uint16_t*, __mmask16)>
struct Keys {
  using Elem = uint16_t;
  static constexpr float kUnit = 0.0f;  // no scales
  static __m512 load(const uint16_t* p, __mmask16 m) { return Load(p, m); }
};
struct KtI8 {
  using Elem = uint8_t;
  static constexpr float kUnit = 1.0f;
  static __m512 load(const uint8_t* p, __mmask16 m) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
  }
};
// FP8 E4M3 bytes, sign-extended to 16 lanes of 16 bits (vpmovsxbw), to
// the f16 bits of value / 256 (fp8_e4m3_to_f16_scaled): shifted left by 7,
// the magnitude lands in the f16 exponent and mantissa (bits 13..7) and the
// sign in bits 15 and 14, so clearing bit 14 gives the f16 of every number;
// S.1111.111 (NaN) would give ±1.875 and gets the exponent's top bit set
// instead, an f16 NaN. Shared by kv_fp8_to_f16 and the FP8 key scores.
__m256i fp8_to_f16_bits(__m256i s) {
  const __m256i t = _mm256_slli_epi16(s, 7);
  const __m256i mag = _mm256_set1_epi16(0x3f80);
  const __m256i f = _mm256_and_si256(t, _mm256_set1_epi16(static_cast<int16_t>(0xbfff)));
  // NaN: 0x3f80 + 0x4000 sets bit 14 (clear in f), giving sign | 0x7f80.
  return _mm256_mask_add_epi16(f, _mm256_cmpeq_epi16_mask(_mm256_and_si256(t, mag), mag), f, _mm256_set1_epi16(0x4000));
}
struct KtFp8 {
  using Elem = uint8_t;
  static constexpr float kUnit = 256.0f;
  static __m512 load(const uint8_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(fp8_to_f16_bits(_mm256_cvtepi8_epi16(_mm_maskz_loadu_epi8(m, p))));
  }
};

// attn_qk_*_kt for H heads: H accumulators of the n <= 16 keys, element d
// of the keys one masked vector, q_h[d] (qt) the broadcast operand of the FMA;
// 8-bit keys' scores then times key_scale * kUnit.
template <int H, typename K>
void attn_qk_kt_heads(const float* qt, int64_t q_stride, const typename K::Elem* kt, int64_t kt_stride,
                      const float* key_scale, int n, int64_t hd, float* s, int64_t s_stride) {
  const __mmask16 m = tail_mask(n);
  __m512 acc[H];
#pragma GCC unroll 8
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; ++d) {
    const __m512 kv = K::load(kt + d * kt_stride, m);
    const float* qd = qt + d * q_stride;  // element d of the H heads
#pragma GCC unroll 8
    for (int h = 0; h < H; ++h) acc[h] = _mm512_fmadd_ps(_mm512_set1_ps(qd[h]), kv, acc[h]);
  }
  if constexpr (K::kUnit != 0.0f) {
    const __m512 sc = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, key_scale), _mm512_set1_ps(K::kUnit));
#pragma GCC unroll 8
    for (auto& a : acc) a = _mm512_mul_ps(a, sc);
  }
#pragma GCC unroll 8
  for (int h = 0; h < H; ++h) _mm512_mask_storeu_ps(s + h * s_stride, m, acc[h]);
}

// attn_qk_kt.inc's table entries.
using KtF16 = Keys<load_f16>;
using KtBf16 = Keys<load_bf16>;
#include "backend/cpu/attn_qk_kt.inc"

// attn_pv.inc's table entries: value rows widened as the keys are.
using PvF16 = KtF16;
using PvBf16 = KtBf16;
using PvI8 = KtI8;
#include "backend/cpu/attn_pv.inc"

// fp8_e4m3_to_f16_scaled on 16 bytes at a time.
void kv_fp8_to_f16(const uint8_t* rows, int64_t stride, int n, int64_t hd, uint16_t* out, float* scales) {
  for (int j = 0; j < n; ++j) {
    const uint8_t* row = rows + j * stride;
    for (int64_t i = 0; i < hd; i += 16) {
      const __mmask16 m = tail_mask(hd - i);
      _mm256_mask_storeu_epi16(out + j * hd + i, m,
                               fp8_to_f16_bits(_mm256_cvtepi8_epi16(_mm_maskz_loadu_epi8(m, row + i))));
    }
    std::memcpy(&scales[j], row + hd, sizeof(float));
    scales[j] *= 256.0f;
  }
}

void scale(float* y, float a, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(load_f32(y + i, m), va));
  }
}

// F16C keeps NaN payloads; core's fp32_to_fp16 canonicalises NaN to
// sign | 0x7e00, so do the same for bit-identical rows.
void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(load_f32(x + i, m), _MM_FROUND_TO_NEAREST_INT);
    const __mmask16 is_nan =
        _mm256_cmpgt_epi16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7fff)), _mm256_set1_epi16(0x7c00));
    const __m256i qnan = _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
                                         _mm256_set1_epi16(0x7e00));
    _mm256_mask_storeu_epi16(y + i, m, _mm256_mask_blend_epi16(is_nan, h, qnan));
  }
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    a0 = _mm512_fmadd_ps(v0, v0, a0);
    a1 = _mm512_fmadd_ps(v1, v1, a1);
  }
  for (; i < n; i += 16) {
    const __m512 v = load_f32(x + i, tail_mask(n - i));
    a0 = _mm512_fmadd_ps(v, v, a0);
  }
  const float ss = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  const __m512 vr = _mm512_set1_ps(1.0f / __builtin_sqrtf(ss / static_cast<float>(n) + eps));
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_mul_ps(load_f32(x + i, m), vr), load_f32(w + i, m)));
  }
}

// e^x to ~2 ulp (see kernels_avx2.cc exp256): range reduction by ln2, degree-7
// Taylor polynomial, exponent scaling; exactly 0 below the smallest normal.
__m512 exp512(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.33654f);
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), _mm512_set1_ps(88.0f));
  const __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(nf), _mm512_set1_epi32(127)), 23);
  const __m512 res = _mm512_mul_ps(p, _mm512_castsi512_ps(e));
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), res);
}

void silu_mul(const float* gate, const float* up, float* y, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 g = load_f32(gate + i, m);
    const __m512 den = _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), g)));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_div_ps(g, den), load_f32(up + i, m)));
  }
}

// x[i] = exp(x[i] - shift) in place; returns their sum (lane-wise, then
// reduced). Shared by softmax and softmax_tile.
float exp_shift_sum(float* x, __m512 shift, int64_t n) {
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(k, exp512(_mm512_sub_ps(load_f32(x + i, k), shift)));
    _mm512_mask_storeu_ps(x + i, k, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  return _mm512_reduce_add_ps(vsum);
}

// softmax_tile's maxima and sums for heads g0..g0+hn-1 of a tile of n <= 16
// scores (one vector per head): the heads' maxima and sums each in one
// transposed reduction (reduce16_with) instead of a horizontal reduction
// chain per head. The same bits as softmax_heads_long on the same scores
// (CpuKernels.SoftmaxTileOneVectorMatchesLongerTileBits): maxima are exact
// in any order, each p is the same exp512 of the same difference, and each
// head's sum pairs its lanes as _mm512_reduce_add_ps does.
void softmax_heads16(float* s, int64_t s_stride, int hn, int n, const float* m_old, float* m_new, float* sums) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __mmask16 k = tail_mask(n);
  __m512 x[16];
  for (int h = 0; h < 16; ++h) x[h] = h < hn ? _mm512_mask_loadu_ps(neg_inf, k, s + h * s_stride) : neg_inf;
  const __m512 mt = reduce16_with(x, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); });
  const __mmask16 hk = tail_mask(hn);
  const __m512 mn = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, hk, m_old), mt);
  _mm512_store_ps(m_new, mn);
  // With nothing but -inf so far, shift by 0: every p is exp(-inf) = 0.
  const __m512 shift = _mm512_mask_mov_ps(mn, _mm512_cmp_ps_mask(mn, neg_inf, _CMP_EQ_OQ), _mm512_setzero_ps());
  for (int h = 0; h < 16; ++h) {
    if (h >= hn) {
      x[h] = _mm512_setzero_ps();
      continue;
    }
    const __m512 sh = _mm512_permutexvar_ps(_mm512_set1_epi32(h), shift);
    x[h] = _mm512_maskz_mov_ps(k, exp512(_mm512_sub_ps(x[h], sh)));
    _mm512_mask_storeu_ps(s + h * s_stride, k, x[h]);
  }
  _mm512_store_ps(sums, reduce16(x));
}

// softmax_tile's maxima and sums for heads g0..g0+hn-1 of a longer tile
// (n > 16), head by head.
void softmax_heads_long(float* s, int64_t s_stride, int hn, int n, const float* m_old, float* m_new, float* sums) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int h = 0; h < hn; ++h) {
    float* sg = s + h * s_stride;
    __m512 vmax = neg_inf;
    for (int i = 0; i < n; i += 16) vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(neg_inf, tail_mask(n - i), sg + i));
    const float mo = m_old[h], mt = _mm512_reduce_max_ps(vmax);
    const float mn = mo > mt ? mo : mt;
    // With nothing but -inf so far, shift by 0: every p is exp(-inf) = 0.
    const __m512 shift = _mm512_set1_ps(mn == -std::numeric_limits<float>::infinity() ? 0.0f : mn);
    m_new[h] = mn;
    sums[h] = exp_shift_sum(sg, shift, n);
  }
}

void softmax_tile(float* s, int64_t s_stride, int heads, int n, float* m, float* l, float* c) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int g0 = 0; g0 < heads; g0 += 16) {
    const int hn = heads - g0 < 16 ? heads - g0 : 16;
    alignas(64) float m_new[16] = {}, sums[16] = {};
    if (n <= 16) {
      softmax_heads16(s + g0 * s_stride, s_stride, hn, n, m + g0, m_new, sums);
    } else {
      softmax_heads_long(s + g0 * s_stride, s_stride, hn, n, m + g0, m_new, sums);
    }
    // c = exp(m - m') for the heads at once: 0 while m = -inf (exp512 of
    // -inf, or of -inf - -inf = NaN, is 0), then exactly 1 (e^0) when m' = m.
    const __mmask16 hk = tail_mask(hn);
    const __m512 mv = _mm512_load_ps(m_new);
    __m512 cv = exp512(_mm512_sub_ps(load_f32(m + g0, hk), mv));
    // A row still at -inf keeps c = 1 (its accumulator is 0 either way).
    cv = _mm512_mask_mov_ps(cv, _mm512_cmp_ps_mask(mv, neg_inf, _CMP_EQ_OQ), _mm512_set1_ps(1.0f));
    _mm512_mask_storeu_ps(c + g0, hk, cv);
    _mm512_mask_storeu_ps(l + g0, hk, _mm512_fmadd_ps(load_f32(l + g0, hk), cv, _mm512_load_ps(sums)));
    _mm512_mask_storeu_ps(m + g0, hk, mv);
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m512 vmax = _mm512_set1_ps(x[0]);
  for (int64_t i = 0; i < n; i += 16)
    vmax = _mm512_mask_max_ps(vmax, tail_mask(n - i), vmax, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  const float sum = exp_shift_sum(x, _mm512_set1_ps(_mm512_reduce_max_ps(vmax)), n);
  scale(x, 1.0f / sum, n);
}

float sum_f32(const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  for (; i < n; i += 16) a0 = _mm512_add_ps(a0, load_f32(x + i, tail_mask(n - i)));
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

}  // namespace

// The AVX-512 table as a CPU without AVX512-BF16 gets it.
constexpr Kernels kAvx512{
    .isa = Isa::kAvx512,
    .dot_f32 = dot_f32,
    .dot_f16 = dot_f16,
    .dot_bf16 = dot_bf16,
    .dot_q8_0 = dot_q8_0,
    .dot_q4_0 = dot_q4_0,
    .dot_rows_f32 = dot_rows_f32,
    .dot_rows_f16 = dot_rows_f16,
    .dot_rows_bf16 = dot_rows_bf16,
    .dot_rows_q8_0 = dot_rows_q8_0,
    .dot_rows_q4_0 = dot_rows_q4_0,
    .quantize_row_q8_0 = quantize_row_q8_0,
    .axpy_f16 = axpy_f16,
    .attn_pv_f16 = attn_pv_f16,
    .attn_qk_f16_kt = attn_qk_f16_kt,
    .attn_qk_bf16_kt = attn_qk_bf16_kt,
    .attn_qk_i8_kt = attn_qk_i8_kt,
    .attn_qk_fp8_kt = attn_qk_fp8_kt,
    .attn_pv_bf16 = attn_pv_bf16,
    .attn_pv_i8 = attn_pv_i8,
    .kv_fp8_to_f16 = kv_fp8_to_f16,
    .scale = scale,
    .f32_to_f16_row = f32_to_f16_row,
    .rmsnorm = rmsnorm,
    .silu_mul = silu_mul,
    .softmax = softmax,
    .softmax_tile = softmax_tile,
    .rope = rope_scalar,
    .sum_f32 = sum_f32,
    .quant = &kQuantAvx512,
    .gemm = &kGemmAvx512,
    .decode_streams = kDefaultDecodeStreams,
    .widen_half_rows = false,
};
// The same table with the AVX512-BF16 tile for BF16 weights.
constexpr Kernels kAvx512Bf16 = [] {
  Kernels t = kAvx512;
  t.gemm = &kGemmAvx512Bf16;
  return t;
}();

const Kernels& avx512_kernels() {
  return cpu_features().avx512_bf16 ? kAvx512Bf16 : kAvx512;
}

const Kernels& avx512_kernels_without_bf16() {
  return kAvx512;
}

}  // namespace tessera::cpu::detail
