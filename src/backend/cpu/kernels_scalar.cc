// Plain C++ kernels: the numerics reference for the SIMD paths and the path
// used on CPUs without AVX2. Compiled for baseline x86-64.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backend/cpu/kernels_internal.h"
#include "core/dtype.h"

namespace tessera::cpu::detail {
namespace {

// Eight partial sums: a little more accurate than one running sum over long
// rows, and the same shape as the SIMD accumulators.
constexpr int kLanes = 8;

float reduce_lanes(const float (&acc)[kLanes]) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

float dot_f32(const float* w, const float* x, int64_t n) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] += w[i] * x[i];
  return reduce_lanes(acc);
}

float dot_f16(const uint16_t* w, const float* x, int64_t n) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] += fp16_to_fp32(w[i]) * x[i];
  return reduce_lanes(acc);
}

float dot_bf16(const uint16_t* w, const float* x, int64_t n) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] += bf16_to_fp32(w[i]) * x[i];
  return reduce_lanes(acc);
}

float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    int32_t sumi = 0;
    for (int i = 0; i < kQuantBlockElems; ++i) sumi += int32_t{w[b].qs[i]} * int32_t{x[b].qs[i]};
    sum += static_cast<float>(sumi) * (fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d));
  }
  return sum;
}

float dot_q4_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    int32_t sumi = 0;
    for (int i = 0; i < kQuantBlockElems / 2; ++i) {
      const int32_t lo = (w[b].qs[i] & 0x0f) - 8;  // element i
      const int32_t hi = (w[b].qs[i] >> 4) - 8;    // element i + 16
      sumi += lo * x[b].qs[i] + hi * x[b].qs[i + 16];
    }
    sum += static_cast<float>(sumi) * (fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d));
  }
  return sum;
}

// The scalar path has no loads to share: kDotRows single-row calls.
template <typename W, typename X, float (*Dot)(const W*, const X*, int64_t)>
void dot_rows(const W* w, int64_t row_stride, const X* x, int64_t n, float* out) {
  for (int r = 0; r < kDotRows; ++r) {
    out[r] = Dot(reinterpret_cast<const W*>(reinterpret_cast<const char*>(w) + r * row_stride), x, n);
  }
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  // Same arithmetic as quantize_row_q8_0_ref, restated here so the table has
  // no dependence on how core implements it.
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* xb = x + b * kQuantBlockElems;
    float amax = 0.0f;
    for (int i = 0; i < kQuantBlockElems; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int i = 0; i < kQuantBlockElems; ++i) y[b].qs[i] = static_cast<int8_t>(std::lround(xb[i] * id));
  }
}

void axpy_f16(float a, const uint16_t* v, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(v[i]);
}

void scale(float* y, float a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= a;
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] += x[i] * x[i];
  const float r = 1.0f / std::sqrt(reduce_lanes(acc) / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * r * w[i];
}

void silu_mul(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void softmax_tile(float* s, int64_t s_stride, int heads, int n, float* m, float* l, float* c) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int g = 0; g < heads; ++g) {
    float* sg = s + g * s_stride;
    float m_new = m[g];
    for (int j = 0; j < n; ++j) m_new = std::fmax(m_new, sg[j]);
    if (m_new == kNegInf) {  // nothing but -inf so far
      for (int j = 0; j < n; ++j) sg[j] = 0.0f;
      c[g] = 1.0f;
      continue;
    }
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
      sg[j] = std::exp(sg[j] - m_new);
      sum += sg[j];
    }
    c[g] = m[g] == kNegInf ? 0.0f : std::exp(m[g] - m_new);
    l[g] = l[g] * c[g] + sum;
    m[g] = m_new;
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    acc[i % kLanes] += x[i];
  }
  const float inv = 1.0f / reduce_lanes(acc);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

float sum_f32(const float* x, int64_t n) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] += x[i];
  return reduce_lanes(acc);
}

}  // namespace

void rope_scalar(float* x, int n_heads, int head_dim, int n_rot, int32_t pos, const float* inv_freq, RopeStyle style) {
  const int half = n_rot / 2;
  for (int i = 0; i < half; ++i) {
    // f32 angle, as the Hugging Face reference computes it.
    const float theta = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(theta);
    const float s = std::sin(theta);
    const int i0 = style == RopeStyle::kNorm ? 2 * i : i;
    const int i1 = style == RopeStyle::kNorm ? 2 * i + 1 : i + half;
    for (int h = 0; h < n_heads; ++h) {
      float* xh = x + static_cast<int64_t>(h) * head_dim;
      const float a = xh[i0];
      const float b = xh[i1];
      xh[i0] = a * c - b * s;
      xh[i1] = a * s + b * c;
    }
  }
}

uint16_t fp8_e4m3_to_f16_scaled(uint8_t b) {
  // NaN: the number's bits below with the exponent's top bit set (the SIMD
  // paths' mapping, fp8_to_f16_bits), a quiet f16 NaN.
  if ((b & 0x7f) == 0x7f) return static_cast<uint16_t>(((b & 0x80) << 8) | 0x7f80);
  // Exponent and mantissa move up 7 bits: the f16 of value / 2^8 (bias 15
  // against 7), subnormals included.
  return static_cast<uint16_t>(((b & 0x80) << 8) | ((b & 0x7f) << 7));
}

namespace {

void kv_fp8_to_f16(const uint8_t* rows, int64_t stride, int n, int64_t hd, uint16_t* out, float* scales) {
  for (int j = 0; j < n; ++j) {
    const uint8_t* row = rows + j * stride;
    for (int64_t i = 0; i < hd; ++i) out[j * hd + i] = fp8_e4m3_to_f16_scaled(row[i]);
    std::memcpy(&scales[j], row + hd, sizeof(float));
    scales[j] *= 256.0f;
  }
}

}  // namespace

const Kernels& scalar_kernels() {
  static constexpr Kernels k{
      .isa = Isa::kScalar,
      .dot_f32 = dot_f32,
      .dot_f16 = dot_f16,
      .dot_bf16 = dot_bf16,
      .dot_q8_0 = dot_q8_0,
      .dot_q4_0 = dot_q4_0,
      .dot_rows_f32 = dot_rows<float, float, dot_f32>,
      .dot_rows_f16 = dot_rows<uint16_t, float, dot_f16>,
      .dot_rows_bf16 = dot_rows<uint16_t, float, dot_bf16>,
      .dot_rows_q8_0 = dot_rows<BlockQ8_0, BlockQ8_0, dot_q8_0>,
      .dot_rows_q4_0 = dot_rows<BlockQ4_0, BlockQ8_0, dot_q4_0>,
      .quantize_row_q8_0 = quantize_row_q8_0,
      .axpy_f16 = axpy_f16,
      .attn_pv_f16 = nullptr,
      .attn_qk_f16_kt = nullptr,
      .attn_qk_bf16_kt = nullptr,
      .attn_qk_i8_kt = nullptr,
      .attn_qk_fp8_kt = nullptr,
      .attn_pv_bf16 = nullptr,
      .attn_pv_i8 = nullptr,
      .kv_fp8_to_f16 = kv_fp8_to_f16,
      .scale = scale,
      .f32_to_f16_row = f32_to_f16_row,
      .rmsnorm = rmsnorm,
      .silu_mul = silu_mul,
      .softmax = softmax,
      .softmax_tile = softmax_tile,
      .rope = rope_scalar,
      .sum_f32 = sum_f32,
      .quant = &kQuantScalar,
      .gemm = nullptr,
      .decode_streams = kDefaultDecodeStreams,
      .widen_half_rows = false,
  };
  return k;
}

}  // namespace tessera::cpu::detail
