// Scalar reference of the AVX512-BF16 tile kernel (GemmKernels::pack_bf16,
// tile_bf16_dp in gemm.h), bit for bit: the activation rounding of
// vcvtne2ps2bf16 and the order and roundings of one vdpbf16ps lane carried
// over the whole row (the panel tile keeps a row in one lane). Intel SDM, VCVTNE2PS2BF16 and
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

// Σ w[i]·x[i] over n bf16 elements (n even; x a packed row, w one row in the
// GGUF layout) in the kernel's order: one f32 accumulator takes, for pair
// k = 0, 1, ..., n / 2 - 1, element 2k + 1's product, then element 2k's.
float dot_bf16_dp_ref(const uint16_t* w, const uint16_t* x, int64_t n);

}  // namespace tessera::cpu
