// AVX2 + FMA + F16C kernels. Compiled with TESSERA_AVX2_FLAGS and only entered
// after cpu_features() reports AVX2; everything here has internal linkage so
// that no AVX2-compiled copy of an inline function can be picked by the linker
// for baseline code.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/kernels_internal.h"
#include "core/dtype.h"

namespace tessera::cpu::detail {
namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

// Round to nearest even, as fp32_to_fp16 (_cvtss_sh is a compound-literal
// macro under Clang, which -Wpedantic rejects in C++).
uint16_t float_to_half(float f) {
  return static_cast<uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

__m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// bf16 is the high half of an f32: widen and shift.
__m256 load_bf16(const uint16_t* p) {
  const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
}

template <typename T>
const T* row_at(const T* w, int64_t row_stride, int r) {
  return reinterpret_cast<const T*>(reinterpret_cast<const char*>(w) + r * row_stride);
}

// s + a * b with one rounding, spelled out so that no instantiation depends on
// whether the compiler contracts a scalar expression.
float fma_ss(float a, float b, float s) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(s)));
}

// R weight rows against one activation row. Each row keeps four accumulators
// over 32-element steps (hiding the FMA latency), then 8-element steps, then
// a scalar tail. R = 1 is the single-row dot; R > 1 runs exactly the same
// instruction sequence per row and only shares the x loads, so results are
// bit-identical to R = 1. R = 2 keeps all accumulators in the 16 ymm registers.
template <int R, typename T, typename LoadW, typename ToFloat>
void dot_rows_float(const T* w, int64_t row_stride, const float* x, int64_t n, float* out, LoadW load_w,
                    ToFloat to_float) {
  const T* wr[R];
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r) {
    wr[r] = row_at(w, row_stride, r);
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 xv[4];
    for (int j = 0; j < 4; ++j) xv[j] = _mm256_loadu_ps(x + i + 8 * j);
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_fmadd_ps(load_w(wr[r] + i + 8 * j), xv[j], acc[r][j]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_loadu_ps(x + i);
    for (int r = 0; r < R; ++r) acc[r][0] = _mm256_fmadd_ps(load_w(wr[r] + i), xv, acc[r][0]);
  }
  for (int r = 0; r < R; ++r) {
    float s = hsum(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
    for (int64_t k = i; k < n; ++k) s = fma_ss(to_float(wr[r][k]), x[k], s);
    out[r] = s;
  }
}

__m256 load_f32(const float* p) {
  return _mm256_loadu_ps(p);
}
float f32_value(float f) {
  return f;
}
float bf16_value(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

float dot_f32(const float* w, const float* x, int64_t n) {
  float out;
  dot_rows_float<1>(w, 0, x, n, &out, load_f32, f32_value);
  return out;
}
float dot_f16(const uint16_t* w, const float* x, int64_t n) {
  float out;
  dot_rows_float<1>(w, 0, x, n, &out, load_f16, half_to_float);
  return out;
}
float dot_bf16(const uint16_t* w, const float* x, int64_t n) {
  float out;
  dot_rows_float<1>(w, 0, x, n, &out, load_bf16, bf16_value);
  return out;
}
// kDotRows rows as pairs: four rows' accumulators would not fit in registers.
void dot_rows_f32(const float* w, int64_t s, const float* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; r += 2) dot_rows_float<2>(row_at(w, s, r), s, x, n, out + r, load_f32, f32_value);
}
void dot_rows_f16(const uint16_t* w, int64_t s, const float* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; r += 2) dot_rows_float<2>(row_at(w, s, r), s, x, n, out + r, load_f16, half_to_float);
}
void dot_rows_bf16(const uint16_t* w, int64_t s, const float* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; r += 2) dot_rows_float<2>(row_at(w, s, r), s, x, n, out + r, load_bf16, bf16_value);
}

__m256i load_q8(const int8_t* qs) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
}

// Per-block int32 lane sums (lane j = products 4j..4j+3, exact). maddubs
// multiplies unsigned by signed bytes, so the weight's sign moves onto x:
// |w| * (x * sign(w)); pair sums stay below 2 * 128 * 127, no saturation.
struct Q8Weights {
  static __m256i lanes(const BlockQ8_0& w, __m256i xv, __m256i /*x_sum8*/) {
    const __m256i wv = load_q8(w.qs);
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
  }
};

// Q4_0: nibbles u in 0..15 are unsigned already, so sum (u - 8) * x =
// maddubs(u, x) - maddubs(8, x); the second term depends only on x and is
// shared between rows.
struct Q4Weights {
  static __m256i lanes(const BlockQ4_0& w, __m256i xv, __m256i x_sum8) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
    const __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, xv), _mm256_set1_epi16(1));
    return _mm256_sub_epi32(p, x_sum8);
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
      const __m256i x_sum8 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(8), xv), _mm256_set1_epi16(1));
      const __m256i sel = _mm256_set1_epi32(j);
      for (int r = 0; r < R; ++r) {
        const __m256 dj = _mm256_permutevar8x32_ps(d[r], sel);
        acc[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Weights::lanes(wr[r][b + j], xv, x_sum8)), dj, acc[r][j]);
      }
    }
  }
  for (; b < nb; ++b) {
    const __m256i xv = load_q8(x[b].qs);
    const __m256i x_sum8 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(8), xv), _mm256_set1_epi16(1));
    const float dx = half_to_float(x[b].d);
    for (int r = 0; r < R; ++r) {
      const __m256 d = _mm256_set1_ps(half_to_float(wr[r][b].d) * dx);
      acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Weights::lanes(wr[r][b], xv, x_sum8)), d, acc[r][0]);
    }
  }
  for (int r = 0; r < R; ++r) {
    out[r] = hsum(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
  }
}

float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n) {
  float out;
  dot_rows_quant<1, Q8Weights>(w, 0, x, n, &out);
  return out;
}
float dot_q4_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n) {
  float out;
  dot_rows_quant<1, Q4Weights>(w, 0, x, n, &out);
  return out;
}
void dot_rows_q8_0(const BlockQ8_0* w, int64_t s, const BlockQ8_0* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; r += 2) dot_rows_quant<2, Q8Weights>(row_at(w, s, r), s, x, n, out + r);
}
void dot_rows_q4_0(const BlockQ4_0* w, int64_t s, const BlockQ8_0* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; r += 2) dot_rows_quant<2, Q4Weights>(row_at(w, s, r), s, x, n, out + r);
}

// lround semantics (half away from zero) without the v + 0.5 double rounding:
// the fraction v - trunc(v) is exact, so comparing it with 0.5 is exact too.
__m256i round_half_away(__m256 v) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign_mask, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign_mask), _mm256_set1_ps(1.0f));
  const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, step)));
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* xb = x + b * kQuantBlockElems;
    __m256 v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(xb + 8 * j);
    const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(sign_mask, v[0]), _mm256_andnot_ps(sign_mask, v[1]));
    const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(sign_mask, v[2]), _mm256_andnot_ps(sign_mask, v[3]));
    const float amax = hmax(_mm256_max_ps(m01, m23));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = float_to_half(d);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) q[j] = round_half_away(_mm256_mul_ps(v[j], vid));
    // The packs work per 128-bit lane; the permute restores element order.
    const __m256i p16 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    const __m256i p8 = _mm256_permutevar8x32_epi32(p16, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), p8);
  }
}

void axpy_f16(float a, const uint16_t* v, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load_f16(v + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * half_to_float(v[i]);
}

// Heads h0..h0+H-1 of attn_pv_f16 over elements [i0, i0 + 8 * C): H x C
// accumulators stay in registers over all n positions; per element the same
// FMA in the same order as axpy_f16's vector part.
// Row element loads for the attention kernels: 8 converted lanes, and one element.
struct F16Rows {
  using Elem = uint16_t;
  static constexpr float kUnit = 0.0f;  // attn_qk_kt.inc: no scales
  static __m256 load(const uint16_t* p) { return load_f16(p); }
  static float value(uint16_t h) { return half_to_float(h); }
};
struct Bf16Rows {
  using Elem = uint16_t;
  static constexpr float kUnit = 0.0f;
  static __m256 load(const uint16_t* p) { return load_bf16(p); }
  static float value(uint16_t h) { return bf16_value(h); }
};

template <int H, int C, typename Rows>
void attn_pv_chunk(const float* p, int64_t p_stride, const typename Rows::Elem* const* v, int64_t v_rows,
                   int64_t v_stride, int n, float* out, int64_t out_stride, int64_t i0, const float* rescale) {
  __m256 acc[H][C];
  for (int h = 0; h < H; ++h) {
    for (int c = 0; c < C; ++c) acc[h][c] = _mm256_loadu_ps(out + h * out_stride + i0 + 8 * c);
    if (rescale != nullptr) {
      const __m256 r = _mm256_set1_ps(rescale[h]);
      for (int c = 0; c < C; ++c) acc[h][c] = _mm256_mul_ps(acc[h][c], r);
    }
  }
  for (int j0 = 0, b = 0; j0 < n; j0 += static_cast<int>(v_rows), ++b) {
    const int j1 = n - j0 < v_rows ? n : j0 + static_cast<int>(v_rows);
    const auto* vrow = reinterpret_cast<const char*>(v[b]);
    for (int j = j0; j < j1; ++j, vrow += v_stride) {
      __m256 vv[C];
      for (int c = 0; c < C; ++c) vv[c] = Rows::load(reinterpret_cast<const typename Rows::Elem*>(vrow) + i0 + 8 * c);
      for (int h = 0; h < H; ++h) {
        const __m256 ph = _mm256_set1_ps(p[h * p_stride + j]);
        for (int c = 0; c < C; ++c) acc[h][c] = _mm256_fmadd_ps(ph, vv[c], acc[h][c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(out + h * out_stride + i0 + 8 * c, acc[h][c]);
  }
}

template <int H, typename Rows>
void attn_pv_heads(const float* p, int64_t p_stride, const typename Rows::Elem* const* v, int64_t v_rows,
                   int64_t v_stride, int n, float* out, int64_t out_stride, int64_t hd, const float* rescale) {
  const int64_t n8 = hd / 8 * 8;
  int64_t i = 0;
  for (; i + 16 <= n8; i += 16)
    attn_pv_chunk<H, 2, Rows>(p, p_stride, v, v_rows, v_stride, n, out, out_stride, i, rescale);
  if (i < n8) attn_pv_chunk<H, 1, Rows>(p, p_stride, v, v_rows, v_stride, n, out, out_stride, i, rescale);
  // scale's and axpy_f16's scalar tails, the same expression per element and position.
  for (int h = 0; h < H; ++h) {
    float* y = out + h * out_stride;
    if (rescale != nullptr) {
      for (int64_t e = n8; e < hd; ++e) y[e] *= rescale[h];
    }
    for (int j = 0; j < n; ++j) {
      const float a = p[h * p_stride + j];
      const auto* vj = reinterpret_cast<const typename Rows::Elem*>(reinterpret_cast<const char*>(v[j / v_rows]) +
                                                                    (j % v_rows) * v_stride);
      for (int64_t e = n8; e < hd; ++e) y[e] += a * Rows::value(vj[e]);
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

// Lanes [0, rem) set (rem clamped to 0..8), for masked loads and stores.
__m256i lane_mask(int64_t rem) {
  const int64_t r = rem < 0 ? 0 : (rem > 8 ? 8 : rem);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(r)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// attn_qk_*_kt for H <= 4 heads and G groups of 8 keys (the last group
// holding `last` <= 8 keys): H x G accumulators, element d of each group one
// vector (a partial group's elements copied into a zero-padded one when
// kPartial), q_h[d] broadcast once for the G groups.
template <int H, int G, bool kPartial, typename Rows>
void attn_qk_kt_groups(const float* qt, int64_t q_stride, const typename Rows::Elem* kt, int64_t kt_stride,
                       const float* key_scale, int last, int64_t hd, float* s, int64_t s_stride) {
  __m256 acc[H][G];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm256_setzero_ps();
  }
  alignas(16) typename Rows::Elem part[8] = {};
  for (int64_t d = 0; d < hd; ++d) {
    const typename Rows::Elem* e = kt + d * kt_stride;
    __m256 kv[G];
    for (int g = 0; g < G; ++g) {
      if (kPartial && g == G - 1) {
        std::memcpy(part, e + 8 * g, static_cast<size_t>(last) * sizeof(*e));
        kv[g] = Rows::load(part);
      } else {
        kv[g] = Rows::load(e + 8 * g);
      }
    }
    const float* qd = qt + d * q_stride;  // element d of the H heads
    for (int h = 0; h < H; ++h) {
      const __m256 b = _mm256_set1_ps(qd[h]);
      for (int g = 0; g < G; ++g) acc[h][g] = _mm256_fmadd_ps(b, kv[g], acc[h][g]);
    }
  }
  for (int g = 0; g < G; ++g) {
    const int nj = kPartial && g == G - 1 ? last : 8;
    if constexpr (Rows::kUnit != 0.0f) {
      alignas(32) float sc[8] = {};
      std::memcpy(sc, key_scale + 8 * g, static_cast<size_t>(nj) * sizeof(float));
      const __m256 sv = _mm256_mul_ps(_mm256_load_ps(sc), _mm256_set1_ps(Rows::kUnit));
      for (int h = 0; h < H; ++h) acc[h][g] = _mm256_mul_ps(acc[h][g], sv);
    }
    for (int h = 0; h < H; ++h) {
      float* out = s + h * s_stride + 8 * g;
      if (nj == 8) {
        _mm256_storeu_ps(out, acc[h][g]);
      } else {
        _mm256_maskstore_ps(out, lane_mask(nj), acc[h][g]);
      }
    }
  }
}

// attn_qk_*_kt for H heads over n <= 16 keys: blocks of at most 4 heads (so
// that the 2 x 4 accumulators, two key vectors and a broadcast fit the 16
// registers), each over both groups of 8 keys at once. Every score is the
// same FMA chain whatever the blocking.
template <int H, typename Rows>
void attn_qk_kt_heads(const float* qt, int64_t q_stride, const typename Rows::Elem* kt, int64_t kt_stride,
                      const float* key_scale, int n, int64_t hd, float* s, int64_t s_stride) {
  if constexpr (H > 4) {
    attn_qk_kt_heads<4, Rows>(qt, q_stride, kt, kt_stride, key_scale, n, hd, s, s_stride);
    attn_qk_kt_heads<H - 4, Rows>(qt + 4, q_stride, kt, kt_stride, key_scale, n, hd, s + 4 * s_stride, s_stride);
  } else {
    const int last = n - (n - 1) / 8 * 8;  // keys in the last group, 1..8
    const bool partial = last < 8;
    if (n > 8) {
      if (partial) {
        attn_qk_kt_groups<H, 2, true, Rows>(qt, q_stride, kt, kt_stride, key_scale, last, hd, s, s_stride);
      } else {
        attn_qk_kt_groups<H, 2, false, Rows>(qt, q_stride, kt, kt_stride, key_scale, last, hd, s, s_stride);
      }
    } else if (partial) {
      attn_qk_kt_groups<H, 1, true, Rows>(qt, q_stride, kt, kt_stride, key_scale, last, hd, s, s_stride);
    } else {
      attn_qk_kt_groups<H, 1, false, Rows>(qt, q_stride, kt, kt_stride, key_scale, last, hd, s, s_stride);
    }
  }
}

// FP8 E4M3 bytes, sign-extended to lanes of 16 bits (vpmovsxbw), to the
// f16 bits of value / 256 (fp8_e4m3_to_f16_scaled): shifted left by 7, the
// magnitude lands in the f16 exponent and mantissa (bits 13..7) and the
// sign in bits 15 and 14, so clearing bit 14 gives the f16 of every number;
// S.1111.111 (NaN) would give ±1.875 and gets the exponent's top bit set
// instead, an f16 NaN. Shared by kv_fp8_to_f16 and the FP8 key scores.
__m256i fp8_to_f16_bits(__m256i s) {
  const __m256i t = _mm256_slli_epi16(s, 7);
  const __m256i mag = _mm256_set1_epi16(0x3f80);
  const __m256i nan = _mm256_cmpeq_epi16(_mm256_and_si256(t, mag), mag);
  return _mm256_or_si256(_mm256_and_si256(t, _mm256_set1_epi16(static_cast<int16_t>(0xbfff))),
                         _mm256_and_si256(nan, _mm256_set1_epi16(0x7e00)));
}

// 8 key elements of an 8-bit cache widened to f32 (attn_qk_i8_kt /
// attn_qk_fp8_kt; FP8 as the f16 number value / 256, kv_fp8_to_f16's
// mapping), and int8 value rows (attn_pv_i8).
struct KtI8 {
  using Elem = uint8_t;
  static constexpr float kUnit = 1.0f;
  static __m256 load(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static float value(uint8_t b) { return static_cast<float>(static_cast<int8_t>(b)); }
};
struct KtFp8 {
  using Elem = uint8_t;
  static constexpr float kUnit = 256.0f;
  static __m256 load(const uint8_t* p) {
    const __m256i b = _mm256_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_cvtph_ps(_mm256_castsi256_si128(fp8_to_f16_bits(b)));  // the low 8 lanes
  }
};

// attn_qk_kt.inc's table entries.
using KtF16 = F16Rows;
using KtBf16 = Bf16Rows;
#include "backend/cpu/attn_qk_kt.inc"

// attn_pv.inc's table entries: value rows widened as the keys are.
using PvF16 = F16Rows;
using PvBf16 = Bf16Rows;
using PvI8 = KtI8;
#include "backend/cpu/attn_pv.inc"

// fp8_e4m3_to_f16_scaled on 16 bytes at a time.
void kv_fp8_to_f16(const uint8_t* rows, int64_t stride, int n, int64_t hd, uint16_t* out, float* scales) {
  for (int j = 0; j < n; ++j) {
    const uint8_t* row = rows + j * stride;
    uint16_t* o = out + j * hd;
    int64_t i = 0;
    for (; i + 16 <= hd; i += 16) {
      const __m256i b = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), fp8_to_f16_bits(b));
    }
    for (; i < hd; ++i) o[i] = fp8_e4m3_to_f16_scaled(row[i]);
    std::memcpy(&scales[j], row + hd, sizeof(float));
    scales[j] *= 256.0f;
  }
}

void scale(float* y, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), va));
  for (; i < n; ++i) y[i] *= a;
}

// F16C rounds to nearest even like fp32_to_fp16, but keeps NaN payloads; core
// canonicalises NaN to sign | 0x7e00, so do the same for bit-identical rows.
__m128i to_f16_canonical(__m256 v) {
  const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
  const __m128i is_nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00));
  const __m128i qnan =
      _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(static_cast<int16_t>(0x8000))), _mm_set1_epi16(0x7e00));
  return _mm_blendv_epi8(h, qnan, is_nan);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), to_f16_canonical(_mm256_loadu_ps(x + i)));
  }
  for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    a0 = _mm256_fmadd_ps(v0, v0, a0);
    a1 = _mm256_fmadd_ps(v1, v1, a1);
  }
  float ss = hsum(_mm256_add_ps(a0, a1));
  for (; i < n; ++i) ss += x[i] * x[i];
  const float r = 1.0f / __builtin_sqrtf(ss / static_cast<float>(n) + eps);
  const __m256 vr = _mm256_set1_ps(r);
  for (i = 0; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vr), _mm256_loadu_ps(w + i)));
  }
  for (; i < n; ++i) y[i] = x[i] * r * w[i];
}

// e^x to ~2 ulp: x = n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor
// polynomial, 2^n through the exponent bits. Underflows to exactly 0 below
// the smallest normal result, as softmax needs for masked (-inf) scores.
__m256 exp256(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33654f);
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
  const __m256 nf =
      _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nf), _mm256_set1_epi32(127)), 23);
  const __m256 res = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), res);
}

void silu_mul(const float* gate, const float* up, float* y, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 den = _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), g)));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_div_ps(g, den), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) y[i] = gate[i] / (1.0f + __builtin_expf(-gate[i])) * up[i];
}

void softmax_tile(float* s, int64_t s_stride, int heads, int n, float* m, float* l, float* c) {
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int g0 = 0; g0 < heads; g0 += 8) {
    const int hn = std::min(8, heads - g0);
    alignas(32) float m_new[8] = {}, sums[8] = {};
    for (int h = 0; h < hn; ++h) {
      float* sg = s + (g0 + h) * s_stride;
      // Whole vectors by plain loads and stores, the last partial one masked
      // (vmaskmovps stores are microcoded on Zen 2/3); the same values.
      const int n8 = n / 8 * 8;
      __m256 vmax = neg_inf;
      for (int i = 0; i < n8; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(sg + i));
      if (n8 < n) {
        const __m256i k = lane_mask(n - n8);
        vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(sg + n8, k), _mm256_castsi256_ps(k)));
      }
      const float mn = std::max(m[g0 + h], hmax(vmax));
      // With nothing but -inf so far, shift by 0: every p is exp(-inf) = 0.
      const __m256 shift = _mm256_set1_ps(mn == -std::numeric_limits<float>::infinity() ? 0.0f : mn);
      __m256 vsum = _mm256_setzero_ps();
      for (int i = 0; i < n8; i += 8) {
        const __m256 p = exp256(_mm256_sub_ps(_mm256_loadu_ps(sg + i), shift));
        _mm256_storeu_ps(sg + i, p);
        vsum = _mm256_add_ps(vsum, p);
      }
      if (n8 < n) {
        const __m256i k = lane_mask(n - n8);
        const __m256 p =
            _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_maskload_ps(sg + n8, k), shift)), _mm256_castsi256_ps(k));
        _mm256_maskstore_ps(sg + n8, k, p);
        vsum = _mm256_add_ps(vsum, p);
      }
      m_new[h] = mn;
      sums[h] = hsum(vsum);
    }
    // c = exp(m - m') for the heads at once: 0 while m = -inf (exp256 of
    // -inf, or of -inf - -inf = NaN, is 0), then exactly 1 (e^0) when m' = m.
    const __m256i hk = lane_mask(hn);
    const __m256 mo = _mm256_maskload_ps(m + g0, hk);
    const __m256 mv = _mm256_load_ps(m_new);
    __m256 cv = exp256(_mm256_sub_ps(mo, mv));
    // A row still at -inf keeps c = 1 (its accumulator is 0 either way).
    cv = _mm256_blendv_ps(cv, _mm256_set1_ps(1.0f), _mm256_cmp_ps(mv, neg_inf, _CMP_EQ_OQ));
    const __m256 lv = _mm256_fmadd_ps(_mm256_maskload_ps(l + g0, hk), cv, _mm256_load_ps(sums));
    _mm256_maskstore_ps(c + g0, hk, cv);
    _mm256_maskstore_ps(l + g0, hk, lv);
    _mm256_maskstore_ps(m + g0, hk, mv);
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 vmax = _mm256_set1_ps(x[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float max = hmax(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const __m256 m = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = hsum(vsum);
  for (; i < n; ++i) {
    x[i] = __builtin_expf(x[i] - max);
    sum += x[i];
  }
  scale(x, 1.0f / sum, n);
}

float sum_f32(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < n; ++i) s += x[i];
  return s;
}

constexpr Kernels kAvx2Table{
    .isa = Isa::kAvx2,
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
    .quant = &kQuantAvx2,
    .gemm = &kGemmAvx2,
    .decode_streams = kDefaultDecodeStreams,
    .widen_half_rows = false,
};

// The same table with the AVX-VNNI tile kernels.
constexpr Kernels kAvxVnniTable = [] {
  Kernels t = kAvx2Table;
  t.isa = Isa::kAvxVnni;
  t.gemm = &kGemmAvxVnni;
  return t;
}();

}  // namespace

const Kernels& avx2_kernels() {
  return kAvx2Table;
}

const Kernels& avx_vnni_kernels() {
  return kAvxVnniTable;
}

const Kernels& avx_vnni_evex_kernels() {
  static constexpr Kernels kTable = [] {
    Kernels t = kAvxVnniTable;
    t.gemm = &kGemmAvxVnniEvex;
    return t;
  }();
  return kTable;
}

}  // namespace tessera::cpu::detail
