// AVX2 + FMA + F16C kernels. Compiled with TESSERA_AVX2_FLAGS and only entered
// after cpu_features() reports AVX2; everything here has internal linkage so
// that no AVX2-compiled copy of an inline function can be picked by the linker
// for baseline code.
#include <immintrin.h>

#include <cstdint>

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

float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

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

// Four independent accumulators hide the FMA latency; the loads of one
// iteration (128 bytes of x) span two cache lines of weights for f16.
template <typename LoadW, typename T>
float dot_generic(const T* w, const float* x, int64_t n, LoadW load_w) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_fmadd_ps(load_w(w + i), _mm256_loadu_ps(x + i), a0);
    a1 = _mm256_fmadd_ps(load_w(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
    a2 = _mm256_fmadd_ps(load_w(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
    a3 = _mm256_fmadd_ps(load_w(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load_w(w + i), _mm256_loadu_ps(x + i), a0);
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

float dot_f32(const float* w, const float* x, int64_t n) {
  float s = dot_generic(w, x, n, [](const float* p) { return _mm256_loadu_ps(p); });
  for (int64_t i = n & ~int64_t{7}; i < n; ++i) s += w[i] * x[i];
  return s;
}

float dot_f16(const uint16_t* w, const float* x, int64_t n) {
  float s = dot_generic(w, x, n, load_f16);
  for (int64_t i = n & ~int64_t{7}; i < n; ++i) s += half_to_float(w[i]) * x[i];
  return s;
}

float dot_bf16(const uint16_t* w, const float* x, int64_t n) {
  float s = dot_generic(w, x, n, load_bf16);
  for (int64_t i = n & ~int64_t{7}; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(w[i]) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    s += f * x[i];
  }
  return s;
}

// Per-block int8 products as 8 int32 partial sums. maddubs multiplies unsigned
// by signed bytes, so the weight's sign moves onto x: |w| * (x * sign(w)).
// Pair sums stay below 2 * 128 * 127 and cannot saturate the int16.
__m256i block_products(__m256i wv, __m256i xv) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

__m256i load_q8(const int8_t* qs) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)); }

// Q4_0 nibbles unpacked into elements 0..31 (low nibbles first), minus 8.
__m256i load_q4(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
  return _mm256_sub_epi8(u, _mm256_set1_epi8(8));
}

template <typename Block>
__m256 block_term(const Block& w, const BlockQ8_0& x, __m256i wv, __m256 acc) {
  const __m256 d = _mm256_set1_ps(half_to_float(w.d) * half_to_float(x.d));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_products(wv, load_q8(x.qs))), d, acc);
}

float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n) {
  const int64_t nb = n / kQuantBlockElems;
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    a0 = block_term(w[b], x[b], load_q8(w[b].qs), a0);
    a1 = block_term(w[b + 1], x[b + 1], load_q8(w[b + 1].qs), a1);
    a2 = block_term(w[b + 2], x[b + 2], load_q8(w[b + 2].qs), a2);
    a3 = block_term(w[b + 3], x[b + 3], load_q8(w[b + 3].qs), a3);
  }
  for (; b < nb; ++b) a0 = block_term(w[b], x[b], load_q8(w[b].qs), a0);
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

float dot_q4_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n) {
  const int64_t nb = n / kQuantBlockElems;
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    a0 = block_term(w[b], x[b], load_q4(w[b].qs), a0);
    a1 = block_term(w[b + 1], x[b + 1], load_q4(w[b + 1].qs), a1);
    a2 = block_term(w[b + 2], x[b + 2], load_q4(w[b + 2].qs), a2);
    a3 = block_term(w[b + 3], x[b + 3], load_q4(w[b + 3].qs), a3);
  }
  for (; b < nb; ++b) a0 = block_term(w[b], x[b], load_q4(w[b].qs), a0);
  return hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
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
  const __m128i qnan = _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16(static_cast<int16_t>(0x8000))),
                                    _mm_set1_epi16(0x7e00));
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
  const __m256 nf = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
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

}  // namespace

const Kernels& avx2_kernels() {
  static constexpr Kernels k{
      .isa = Isa::kAvx2,
      .dot_f32 = dot_f32,
      .dot_f16 = dot_f16,
      .dot_bf16 = dot_bf16,
      .dot_q8_0 = dot_q8_0,
      .dot_q4_0 = dot_q4_0,
      .quantize_row_q8_0 = quantize_row_q8_0,
      .axpy_f16 = axpy_f16,
      .scale = scale,
      .f32_to_f16_row = f32_to_f16_row,
      .rmsnorm = rmsnorm,
      .silu_mul = silu_mul,
      .softmax = softmax,
      .rope = rope_scalar,
      .sum_f32 = sum_f32,
  };
  return k;
}

}  // namespace tessera::cpu::detail
