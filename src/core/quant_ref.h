// Scalar reference quantization and dequantization of the GGUF block formats
// (Q8_0, Q4_0; layouts in core/dtype.h). These define the numerics; SIMD
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

// Converts a row of any DType to f32. `src` points at dtype_row_bytes(t, n) bytes.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Converts f32 to any DType (quantizing with the reference functions above).
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace tessera
