#include "backend/cpu/kernels.h"

#include <cstdlib>
#include <string_view>

#include "backend/cpu/kernels_internal.h"
#include "core/check.h"

namespace tessera::cpu {

const Kernels& kernels_for(Isa isa) {
  // The caller promises isa is supported; checking here turns a misuse into a
  // clear abort instead of an illegal-instruction crash deep in a matmul.
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kScalar:
      return detail::scalar_kernels();
    case Isa::kAvx2:
      TESSERA_CHECK(f.avx2);
      return detail::avx2_kernels();
    case Isa::kAvx512:
      TESSERA_CHECK(f.avx512_vnni);
      return detail::avx512_kernels();
  }
  return detail::scalar_kernels();
}

const Kernels& kernels() {
  // TESSERA_TILED_GEMM=0 drops the tile kernels (matmul then computes one dot
  // product per (row, token), the pre-tiling path), for side-by-side benchmarks.
  static const Kernels k = [] {
    Kernels t = kernels_for(best_isa());
    const char* env = std::getenv("TESSERA_TILED_GEMM");
    if (env != nullptr && std::string_view(env) == "0") t.gemm = nullptr;
    return t;
  }();
  return k;
}

}  // namespace tessera::cpu
