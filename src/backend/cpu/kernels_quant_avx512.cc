// AVX-512VL + VNNI (vpdpbusd on 256-bit vectors) dot products of Q4_1/Q5_0/Q5_1/K-quant weights
// (QuantKernels); the code is kernels_quant_simd.inc. Compiled with this
// ISA's flags and only reached through kernels_for() after the CPUID check.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels_internal.h"
#include "core/dtype.h"

#define TESSERA_QUANT_VNNI 1

namespace tessera::cpu::detail {
namespace {

#include "backend/cpu/kernels_quant_simd.inc"

}  // namespace

const QuantKernels kQuantAvx512{
    .dot_q4_1 = dot_q4_1,
    .dot_q5_0 = dot_q5_0,
    .dot_q5_1 = dot_q5_1,
    .dot_q2_k = dot_q2_k,
    .dot_q3_k = dot_q3_k,
    .dot_q4_k = dot_q4_k,
    .dot_q5_k = dot_q5_k,
    .dot_q6_k = dot_q6_k,
    .dot_rows_q4_k = dot_rows_q4_k,
    .dot_rows_q5_k = dot_rows_q5_k,
    .dot_rows_q6_k = dot_rows_q6_k,
    .quantize_row_q8_k = quantize_row_q8_k_simd,
};

}  // namespace tessera::cpu::detail
