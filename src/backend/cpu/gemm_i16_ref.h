// Scalar reference of the int16 tile kernels (GemmKernels::quantize_i16,
// tile_i16 in gemm.h; AVX2 and AVX-512), bit for bit, and the group quantization that both the
// weight repack (weight_layout.h repack_rows_as_i16_panel) and the
// activation packing use.
//
// The format: a row is cut into groups of kI16GroupCols = 64 elements; each
// group keeps one f32 scale d and 64 int16 quants q with |q| <= qmax, the
// value being d * q (symmetric absmax quantization, as Q8_0 is, with 16-bit
// quants). Weights take qmax = kI16WeightMax = 2047, activations
// kI16ActMax = 16383: a product is then below 2^25, and a group's 64
// products add up exactly in an int32 lane (2047 * 16383 * 64 < 2^31), so
// vpmaddwd + vpaddd (or AVX-VNNI's vpdpwssd) sum a group without rounding.
// The float steps per group are the same as the quantized tiles' (gemm.h):
// acc = fma(float(isum), d_w * d_x, acc), groups in row order.
#pragma once

#include <cstdint>

namespace tessera::cpu {

// Columns per quantization group (weights and activations alike).
inline constexpr int kI16GroupCols = 64;
// Largest quant magnitude of the weights and of the activations.
inline constexpr int32_t kI16WeightMax = 2047;
inline constexpr int32_t kI16ActMax = 16383;

// Quantizes v[kI16GroupCols] into q[kI16GroupCols] and returns the scale d:
//   m = max |v[i]|; inv = qmax / m (f32); q[i] = clamp(nearbyint(v[i] * inv),
//   -qmax, qmax) (round to nearest even); d = m / qmax (f32).
// A group with Inf or NaN gets d = NaN and q = 0, so its products are NaN
// (the float product would be Inf or NaN there); an all-zero group, or one so
// small that inv overflows (m < qmax / FLT_MAX: ~4.8e-35 for activations,
// ~6e-36 for weights, below every F16 value), gets d = 0 and q = 0.
float quantize_i16_group(const float* v, int16_t* q, int32_t qmax);

// Bytes of one packed activation row of n elements (n % 64 == 0): the n
// int16 quants, then the n / 64 f32 group scales.
inline int64_t packed_i16_row_bytes(int64_t n) {
  return n * 2 + n / kI16GroupCols * 4;
}

// x[n] -> out (packed_i16_row_bytes(n) bytes, 4-byte aligned) with
// quantize_i16_group(·, ·, kI16ActMax) per group; n % 64 == 0.
void pack_i16_ref(const float* x, uint8_t* out, int64_t n);

// The tile's result for one weight row: wq[n] the row's quants (row-major),
// wd[n / 64] its group scales, x a packed row. In the kernel's order: for
// each group g, isum = Σ wq·xq exactly (int32), then
// acc = fma(float(isum), wd[g] * xd[g], acc).
float dot_i16_ref(const int16_t* wq, const float* wd, const uint8_t* x, int64_t n);

}  // namespace tessera::cpu
