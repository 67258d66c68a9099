// The AVX2 + FMA + F16C tile kernels (kGemmAvx2): gemm_avx2.inc with
// vpmaddubsw / vpmaddwd integer products.
#define TESSERA_AVX_VNNI 0
#define TESSERA_AVX2_GEMM_TABLE kGemmAvx2
#include "backend/cpu/gemm_avx2.inc"
