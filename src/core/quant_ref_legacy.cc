// Reference Q4_1 / Q5_0 / Q5_1 (ggml "legacy" 32-element formats with an
// offset or a fifth bit). Layouts: core/dtype.h; ggml/src/ggml-common.h.
#include <cmath>
#include <cstring>

#include "core/quant_ref.h"

namespace tessera {

namespace {

constexpr int kQk = kQuantBlockElems;

uint8_t clamp_u(int v, int hi) { return static_cast<uint8_t>(v < 0 ? 0 : (v > hi ? hi : v)); }

// Asymmetric block: d = (max - min) / levels, m = min, u = round((x - min) / d).
// Fills u[32] and returns {d, m}.
void quantize_affine(const float* xb, int levels, uint8_t* u, float* d_out, float* m_out) {
  float mn = xb[0];
  float mx = xb[0];
  for (int i = 1; i < kQk; ++i) {
    mn = std::fmin(mn, xb[i]);
    mx = std::fmax(mx, xb[i]);
  }
  const float d = (mx - mn) / static_cast<float>(levels);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQk; ++i) u[i] = clamp_u(static_cast<int>((xb[i] - mn) * id + 0.5f), levels);
  *d_out = d;
  *m_out = mn;
}

// Symmetric 5-bit block (as Q4_0 with 16 levels each side): d = m / -16.
float quantize_sym5(const float* xb, uint8_t* u) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int i = 0; i < kQk; ++i) {
    if (std::fabs(xb[i]) > amax) {
      amax = std::fabs(xb[i]);
      max = xb[i];
    }
  }
  const float d = max / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < kQk; ++i) u[i] = clamp_u(static_cast<int>(xb[i] * id + 16.5f), 31);
  return d;
}

// Packs u[32] (5-bit) into qs (low nibbles, Q4_0 order) and qh (bit i = bit 4 of u[i]).
void pack5(const uint8_t* u, uint8_t* qs, uint8_t* qh) {
  uint32_t h = 0;
  for (int i = 0; i < kQk / 2; ++i) qs[i] = static_cast<uint8_t>((u[i] & 0x0f) | (u[i + 16] & 0x0f) << 4);
  for (int i = 0; i < kQk; ++i) h |= static_cast<uint32_t>(u[i] >> 4) << i;
  std::memcpy(qh, &h, 4);  // little-endian, as ggml's memcpy to uint32_t
}

// Inverse of pack5.
void unpack5(const uint8_t* qs, const uint8_t* qh, uint8_t* u) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  for (int i = 0; i < kQk / 2; ++i) {
    u[i] = static_cast<uint8_t>((qs[i] & 0x0f) | ((h >> i) & 1u) << 4);
    u[i + 16] = static_cast<uint8_t>((qs[i] >> 4) | ((h >> (i + 16)) & 1u) << 4);
  }
}

}  // namespace

void quantize_row_q4_1_ref(const float* x, BlockQ4_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    uint8_t u[kQk];
    float d, m;
    quantize_affine(x + b * kQk, 15, u, &d, &m);
    y[b].d = fp32_to_fp16(d);
    y[b].m = fp32_to_fp16(m);
    for (int i = 0; i < kQk / 2; ++i) y[b].qs[i] = static_cast<uint8_t>(u[i] | u[i + 16] << 4);
  }
}

void quantize_row_q5_0_ref(const float* x, BlockQ5_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    uint8_t u[kQk];
    y[b].d = fp32_to_fp16(quantize_sym5(x + b * kQk, u));
    pack5(u, y[b].qs, y[b].qh);
  }
}

void quantize_row_q5_1_ref(const float* x, BlockQ5_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    uint8_t u[kQk];
    float d, m;
    quantize_affine(x + b * kQk, 31, u, &d, &m);
    y[b].d = fp32_to_fp16(d);
    y[b].m = fp32_to_fp16(m);
    pack5(u, y[b].qs, y[b].qh);
  }
}

void dequantize_row_q4_1_ref(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    const float m = fp16_to_fp32(x[b].m);
    float* yb = y + b * kQk;
    for (int i = 0; i < kQk / 2; ++i) {
      yb[i] = d * static_cast<float>(x[b].qs[i] & 0x0f) + m;
      yb[i + 16] = d * static_cast<float>(x[b].qs[i] >> 4) + m;
    }
  }
}

void dequantize_row_q5_0_ref(const BlockQ5_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    uint8_t u[kQk];
    unpack5(x[b].qs, x[b].qh, u);
    for (int i = 0; i < kQk; ++i) y[b * kQk + i] = d * static_cast<float>(u[i] - 16);
  }
}

void dequantize_row_q5_1_ref(const BlockQ5_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQk; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    const float m = fp16_to_fp32(x[b].m);
    uint8_t u[kQk];
    unpack5(x[b].qs, x[b].qh, u);
    for (int i = 0; i < kQk; ++i) y[b * kQk + i] = d * static_cast<float>(u[i]) + m;
  }
}

}  // namespace tessera
