#include "core/quant_ref.h"

#include <cmath>
#include <cstring>

namespace tessera {

void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n) {
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

void quantize_row_q4_0_ref(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float* xb = x + b * kQuantBlockElems;
    float amax = 0.0f;
    float max = 0.0f;
    for (int i = 0; i < kQuantBlockElems; ++i) {
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int i = 0; i < kQuantBlockElems / 2; ++i) {
      auto q = [&](float v) {
        const int qi = static_cast<int>(v * id + 8.5f);
        return static_cast<uint8_t>(qi < 0 ? 0 : (qi > 15 ? 15 : qi));
      };
      y[b].qs[i] = static_cast<uint8_t>(q(xb[i]) | q(xb[i + 16]) << 4);
    }
  }
}

void dequantize_row_q8_0_ref(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int i = 0; i < kQuantBlockElems; ++i) y[b * kQuantBlockElems + i] = d * x[b].qs[i];
  }
}

void dequantize_row_q4_0_ref(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQuantBlockElems; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int i = 0; i < kQuantBlockElems / 2; ++i) {
      y[b * kQuantBlockElems + i] = d * static_cast<float>((x[b].qs[i] & 0x0f) - 8);
      y[b * kQuantBlockElems + i + 16] = d * static_cast<float>((x[b].qs[i] >> 4) - 8);
    }
  }
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case DType::kQ8_0: dequantize_row_q8_0_ref(static_cast<const BlockQ8_0*>(src), dst, n); return;
    case DType::kQ4_0: dequantize_row_q4_0_ref(static_cast<const BlockQ4_0*>(src), dst, n); return;
    case DType::kQ4_1: dequantize_row_q4_1_ref(static_cast<const BlockQ4_1*>(src), dst, n); return;
    case DType::kQ5_0: dequantize_row_q5_0_ref(static_cast<const BlockQ5_0*>(src), dst, n); return;
    case DType::kQ5_1: dequantize_row_q5_1_ref(static_cast<const BlockQ5_1*>(src), dst, n); return;
    case DType::kQ2_K: dequantize_row_q2_k_ref(static_cast<const BlockQ2_K*>(src), dst, n); return;
    case DType::kQ3_K: dequantize_row_q3_k_ref(static_cast<const BlockQ3_K*>(src), dst, n); return;
    case DType::kQ4_K: dequantize_row_q4_k_ref(static_cast<const BlockQ4_K*>(src), dst, n); return;
    case DType::kQ5_K: dequantize_row_q5_k_ref(static_cast<const BlockQ5_K*>(src), dst, n); return;
    case DType::kQ6_K: dequantize_row_q6_k_ref(static_cast<const BlockQ6_K*>(src), dst, n); return;
    case DType::kQ8_K: dequantize_row_q8_k_ref(static_cast<const BlockQ8_K*>(src), dst, n); return;
  }
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
      return;
    }
    case DType::kQ8_0: quantize_row_q8_0_ref(src, static_cast<BlockQ8_0*>(dst), n); return;
    case DType::kQ4_0: quantize_row_q4_0_ref(src, static_cast<BlockQ4_0*>(dst), n); return;
    case DType::kQ4_1: quantize_row_q4_1_ref(src, static_cast<BlockQ4_1*>(dst), n); return;
    case DType::kQ5_0: quantize_row_q5_0_ref(src, static_cast<BlockQ5_0*>(dst), n); return;
    case DType::kQ5_1: quantize_row_q5_1_ref(src, static_cast<BlockQ5_1*>(dst), n); return;
    case DType::kQ2_K: quantize_row_q2_k_ref(src, static_cast<BlockQ2_K*>(dst), n); return;
    case DType::kQ3_K: quantize_row_q3_k_ref(src, static_cast<BlockQ3_K*>(dst), n); return;
    case DType::kQ4_K: quantize_row_q4_k_ref(src, static_cast<BlockQ4_K*>(dst), n); return;
    case DType::kQ5_K: quantize_row_q5_k_ref(src, static_cast<BlockQ5_K*>(dst), n); return;
    case DType::kQ6_K: quantize_row_q6_k_ref(src, static_cast<BlockQ6_K*>(dst), n); return;
    case DType::kQ8_K: quantize_row_q8_k_ref(src, static_cast<BlockQ8_K*>(dst), n); return;
  }
}

}  // namespace tessera
