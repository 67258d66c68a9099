// Per-ISA kernel tables behind kernels_for(). Each table lives in its own
// translation unit compiled with that ISA's flags (cmake/compiler_flags.cmake);
// the tables are constant-initialised so that nothing in an AVX file runs
// before the run-time CPUID check has selected it.
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"

namespace tessera::cpu::detail {

const Kernels& scalar_kernels();
const Kernels& avx2_kernels();
// avx2_kernels() with the AVX-VNNI tile kernels (kGemmAvxVnni).
const Kernels& avx_vnni_kernels();
// avx_vnni_kernels() with kGemmAvxVnniEvex (for AVX-512 VNNI CPUs).
const Kernels& avx_vnni_evex_kernels();
// The AVX-512 table for this CPU: with the AVX512-BF16 tile
// (kGemmAvx512Bf16) where CPUID reports AVX512-BF16.
const Kernels& avx512_kernels();
// The AVX-512 table of CPUs without AVX512-BF16 (kGemmAvx512).
const Kernels& avx512_kernels_without_bf16();

// The f16 bits of FP8 E4M3 value b / 256 (exact; NaN for S.1111.111): what
// Kernels::kv_fp8_to_f16 stores, for the SIMD paths' scalar tails.
uint16_t fp8_e4m3_to_f16_scaled(uint8_t b);

// Per-ISA QuantKernels sets (kernels_quant_scalar.cc, kernels_quant_avx2.cc,
// kernels_quant_avx512.cc), referenced by address from the tables above.
extern const QuantKernels kQuantScalar;
extern const QuantKernels kQuantAvx2;
extern const QuantKernels kQuantAvx512;
// Tile kernels of the AVX-512 and AVX2 tables (gemm_avx512.cc, gemm_avx2.cc).
extern const GemmKernels kGemmAvx512;
extern const GemmKernels kGemmAvx2;
// kGemmAvx2's kernels with vpdpbusd (AVX-VNNI) integer products, bit-identical
// (gemm_avx_vnni.cc).
extern const GemmKernels kGemmAvxVnni;
// kGemmAvxVnni's code with the EVEX (AVX512-VNNI + AVX512VL) encodings of the
// same 256-bit vpdpbusd / vpdpwssd (gemm_avx_vnni_evex.cc).
extern const GemmKernels kGemmAvxVnniEvex;
// kGemmAvx512 plus the AVX512-BF16 kernel (gemm_bf16_avx512.cc), for CPUs
// that report avx512_bf16.
extern const GemmKernels kGemmAvx512Bf16;
void pack_bf16_avx512(const float* x, uint16_t* out, int64_t n);
void tile_bf16_dp_avx512(const uint16_t* w, int64_t panel_stride, int panels, const uint16_t* x, int64_t xs, int tokens,
                         int64_t n, float* y, int64_t ys, int64_t yps);
void tile_bf16_dp_part_avx512(const uint16_t* w, int rows, const uint16_t* x, int64_t xs, int tokens, int64_t n,
                              float* y, int64_t ys);
// tile_bf16_dp_avx512's largest tile: panels × tokens.
inline constexpr int kBf16DpPanels = 4;
inline constexpr int kBf16DpTokens = 6;
// The Q8_K activation quantizer every table uses (kernels_quant_scalar.cc).
void quantize_row_q8_k_scalar(const float* x, BlockQ8_K* y, int64_t n);

// Scalar entries that the SIMD tables share because they gain little from
// vectorisation (rope's cost is dominated by sin/cos, computed once per pair).
void rope_scalar(float* x, int n_heads, int head_dim, int n_rot, int32_t pos, const float* inv_freq, RopeStyle style);

// for_head_blocks' last block: f.template operator()<rest>(h) for rest < H + 1.
template <int H, typename F>
void head_block_tail(int rest, int h, F& f) {
  if constexpr (H > 0) {
    if (rest == H) return f.template operator()<H>(h);
    head_block_tail<H - 1>(rest, h, f);
  }
}

// Runs f.template operator()<H>(h0) over the heads [0, heads) in blocks:
// whole blocks of N heads, then one of heads % N, H a compile-time count so
// that a kernel's H accumulators stay in registers (attn_qk_*_kt).
template <int N, typename F>
void for_head_blocks(int heads, F&& f) {
  int h = 0;
  for (; h + N <= heads; h += N) f.template operator()<N>(h);
  if (h < heads) head_block_tail<N - 1>(heads - h, h, f);
}

}  // namespace tessera::cpu::detail
