// The activation packing of the tile kernel sets (gemm.h), shared by every
// ISA: the caller's quantizer (its table's quantize_row_q8_0 /
// quantize_row_q8_k, bit-identical to the scalar reference) makes the
// blocks, these functions lay them out as PackedQ8x16Group /
// PackedQ8KGroup. Compiled for baseline x86-64 (no ISA flags).
#pragma once

#include <cstdint>

#include "backend/cpu/gemm.h"
#include "core/dtype.h"

namespace tessera::cpu::detail {

using QuantizeQ8_0Fn = void (*)(const float* x, BlockQ8_0* y, int64_t n);
using QuantizeQ8_KFn = void (*)(const float* x, BlockQ8_K* y, int64_t n);

// GemmKernels::pack_q8x16 with `quantize` making the Q8_0 blocks.
void pack_q8x16_with(QuantizeQ8_0Fn quantize, const float* x, PackedQ8x16Group* out, int64_t n, int32_t offset);
// GemmKernels::pack_q8k with `quantize` making the Q8_K blocks.
void pack_q8k_with(QuantizeQ8_KFn quantize, const float* x, PackedQ8KGroup* out, int64_t n);

}  // namespace tessera::cpu::detail
