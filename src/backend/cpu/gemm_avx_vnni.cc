// The AVX2 tile kernels with AVX-VNNI integer products (kGemmAvxVnni, for
// CPUs that report avx_vnni: Intel since Alder Lake, AMD since Zen 5):
// gemm_avx2.inc with vpdpbusd; compiled with -mavxvnni on top of the AVX2
// flags. Bit-identical to kGemmAvx2.
#define TESSERA_AVX_VNNI 1
#define TESSERA_AVX2_GEMM_TABLE kGemmAvxVnni
#include "backend/cpu/gemm_avx2.inc"
