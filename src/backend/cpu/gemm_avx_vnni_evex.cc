// The AVX-VNNI tile kernels (gemm_avx_vnni.cc) with each 256-bit vpdpbusd /
// vpdpwssd in its EVEX encoding (AVX512-VNNI + AVX512VL) instead of the VEX
// one: the same operation on the same lanes (Intel SDM, VPDPBUSD and
// VPDPWSSD), so this table runs the AVX-VNNI source on CPUs that have AVX-512
// VNNI but not AVX-VNNI (Zen 4, Ice Lake, Cascade Lake). With the AVX-512
// flags the compiler may EVEX-encode other instructions too and uses a few
// zmm moves; the operations are the source's. For tests and benchmarks only (kernels.h
// avx_vnni_kernels_as_evex); kernels_for never chooses it. Compiled with the
// AVX2 flags plus -mavx512f -mavx512vl -mavx512vnni.
#define TESSERA_AVX_VNNI 1
#define TESSERA_AVX_VNNI_EVEX 1
#define TESSERA_AVX2_GEMM_TABLE kGemmAvxVnniEvex
#include "backend/cpu/gemm_avx2.inc"
