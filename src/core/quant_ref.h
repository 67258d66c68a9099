// Scalar reference quantization and dequantization of the GGUF block formats
// (layouts in core/dtype.h, bit-compatible with ggml/src/ggml-common.h). These define the numerics; SIMD
// kernels in src/backend/cpu are tested against them.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace tessera {

// x[n] -> y[n / 32]; n must be a multiple of 32. d = max|x| / 127, q = round(x / d).
void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n);
// x[n] -> y[n / 32]; d = m / -8 where m is the element of largest magnitude,
// q = clamp(round-half-up(x / d) + 8, 0, 15).
void quantize_row_q4_0_ref(const float* x, BlockQ4_0* y, int64_t n);

void dequantize_row_q8_0_ref(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q4_0_ref(const BlockQ4_0* x, float* y, int64_t n);

// The 32-element formats with offsets / a fifth bit (quant_ref_legacy.cc).
// Q4_1/Q5_1: d = (max - min) / (2^bits - 1), m = min, u = round((x - m) / d).
// Q5_0: as Q4_0 with 16 levels each side: d = m / -16, u = round(x / d) + 16.
void quantize_row_q4_1_ref(const float* x, BlockQ4_1* y, int64_t n);
void quantize_row_q5_0_ref(const float* x, BlockQ5_0* y, int64_t n);
void quantize_row_q5_1_ref(const float* x, BlockQ5_1* y, int64_t n);
void dequantize_row_q4_1_ref(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0_ref(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1_ref(const BlockQ5_1* x, float* y, int64_t n);

// K-quants (quant_ref_kquant.cc); n must be a multiple of 256. Each
// sub-block's scale (and, for Q2_K/Q4_K/Q5_K, its offset) is searched for
// the least squared error: codes from 21 trial scales around the min/max one,
// each refit by linear least squares given its codes, the best kept. The
// super-block scales d/dmin come from the largest sub-block scale, rounded
// to the 4/6/8-bit scale codes, and every element is then rounded against
// its decoded scale. The search is ours (docs/quantization.md: its KL
// divergence against llama.cpp's llama-quantize on the same model); the bit
// layout is the ggml one and dequantizes the same anywhere.
void quantize_row_q2_k_ref(const float* x, BlockQ2_K* y, int64_t n);
void quantize_row_q3_k_ref(const float* x, BlockQ3_K* y, int64_t n);
void quantize_row_q4_k_ref(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q5_k_ref(const float* x, BlockQ5_K* y, int64_t n);
void quantize_row_q6_k_ref(const float* x, BlockQ6_K* y, int64_t n);
// Q8_K activations: d = max|x| / 127, qs = round(x / d), bsums filled in.
void quantize_row_q8_k_ref(const float* x, BlockQ8_K* y, int64_t n);
void dequantize_row_q2_k_ref(const BlockQ2_K* x, float* y, int64_t n);
void dequantize_row_q3_k_ref(const BlockQ3_K* x, float* y, int64_t n);
void dequantize_row_q4_k_ref(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q5_k_ref(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_k_ref(const BlockQ6_K* x, float* y, int64_t n);
void dequantize_row_q8_k_ref(const BlockQ8_K* x, float* y, int64_t n);

// Q4_K/Q5_K sub-block j's 6-bit scale and min from the 12 packed bytes
// (ggml get_scale_min_k4).
void q4k_scale_min(int j, const uint8_t* scales, uint8_t* sc, uint8_t* m);
// The inverse: packs sc[8] and m[8] (6-bit values) into out[12].
void pack_scale_min_k4(const uint8_t* sc, const uint8_t* m, uint8_t* out);
// Q3_K sub-block j's scale code (6 bits, 0..63; the multiplier is code - 32).
int q3k_scale(int j, const uint8_t* scales);

// Converts a row of any DType to f32. `src` points at dtype_row_bytes(t, n) bytes.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Converts f32 to any DType (quantizing with the reference functions above).
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace tessera
