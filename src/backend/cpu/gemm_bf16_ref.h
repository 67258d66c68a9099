// Scalar reference of the AVX512-BF16 tile kernel (GemmKernels::pack_bf16,
// tile_bf16_dp in gemm.h), bit for bit: the activation rounding of
// vcvtne2ps2bf16 and the lane order and roundings of vdpbf16ps followed by
// the tile's fixed 16-lane reduction. Intel SDM, VCVTNE2PS2BF16 and
// VDPBF16PS: round to nearest even, denormal inputs and results flushed to
// zero; each lane adds its odd-index product, then its even-index one, into
// its f32 accumulator, each addition rounded (the bf16 × bf16 products are
// exact in f32).
#pragma once

#include <cstdint>

namespace tessera::cpu {

// f32 -> bf16 as vcvtne2ps2bf16: nearest even, subnormals to signed zero,
// NaN quieted.
uint16_t fp32_to_bf16_daz(float f);

// x[n] -> out[packed_bf16_row_elems(n)] with fp32_to_bf16_daz, the tail zero.
void pack_bf16_ref(const float* x, uint16_t* out, int64_t n);

// Σ w[i]·x[i] over n bf16 elements (x a packed row, w any bf16 row) in the
// kernel's order: lane j of 32-element step s takes elements 32s + 2j + 1,
// then 32s + 2j; the 16 lanes are then summed pairwise (j + 8, j + 4,
// j + 2, j + 1).
float dot_bf16_dp_ref(const uint16_t* w, const uint16_t* x, int64_t n);

}  // namespace tessera::cpu
