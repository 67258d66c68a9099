// FP8 E4M3 (the "E4M3FN" encoding of the OCP 8-bit floating point
// specification, v1.0, 2023, and of NVIDIA Hopper): 1 sign bit, 4 exponent
// bits (bias 7), 3 mantissa bits; subnormals when the exponent field is 0;
// no infinities; S.1111.111 is NaN; the largest finite value is ±448.
#pragma once

#include <cstdint>

namespace tessera {

inline constexpr float kFp8E4M3Max = 448.0f;

// Round to nearest, ties to even; magnitudes above 448 saturate to ±448
// (the "satfinite" conversion); NaN becomes 0x7F with x's sign.
uint8_t fp32_to_fp8_e4m3(float x);
// Exact: every E4M3 value is representable in f32.
float fp8_e4m3_to_fp32(uint8_t b);
// The 256 decoded values, for kernels that convert by table lookup.
const float* fp8_e4m3_table();

}  // namespace tessera
