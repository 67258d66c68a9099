#include "backend/cpu/kernels.h"

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
    case Isa::kAvxVnni:
      TESSERA_CHECK(f.avx_vnni);
      return detail::avx_vnni_kernels();
    case Isa::kAvx512:
      TESSERA_CHECK(f.avx512_vnni);
      return detail::avx512_kernels();
  }
  return detail::scalar_kernels();
}

const Kernels& kernels() {
  return kernels_for(best_isa());
}

const Kernels& kernels_without_avx512_bf16(Isa isa) {
  if (isa != Isa::kAvx512) return kernels_for(isa);
  TESSERA_CHECK(cpu_features().avx512_vnni);
  return detail::avx512_kernels_without_bf16();
}

const Kernels& avx_vnni_kernels_as_evex() {
  TESSERA_CHECK(cpu_features().avx512_vnni);
  return detail::avx_vnni_evex_kernels();
}

Kernels kernels_with(Isa isa, bool tile_kernels, int decode_streams) {
  TESSERA_CHECK(decode_streams >= 1 && decode_streams <= kMaxDecodeStreams);
  Kernels t = kernels_for(isa);
  if (!tile_kernels) t.gemm = nullptr;
  t.decode_streams = decode_streams;
  t.widen_half_rows = cpu_features().splits_256bit_ops;
  return t;
}

}  // namespace tessera::cpu
