// Run-time instruction-set detection. tessera builds for baseline x86-64 and
// picks a SIMD path per kernel from what CPUID reports, so one binary runs on
// any x86-64 machine.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "tessera/isa.h"

namespace tessera {

struct CpuFeatures {
  bool avx2 = false;    // with FMA and F16C
  bool avx512 = false;  // F, BW, VL, DQ
  bool avx512_vnni = false;
  bool avx512_bf16 = false;  // vdpbf16ps, vcvtne2ps2bf16 (Zen 4, Cooper Lake, Sapphire Rapids and later)
  bool avx_vnni = false;     // VEX-encoded 256-bit vpdpbusd (CPUID.(7,1):EAX[4]), with avx2
  int physical_cores = 1;
};

// Detected once, thread-safe.
const CpuFeatures& cpu_features();

// best_isa(), isa_from_name() and supported_isas() are declared in tessera/isa.h.

}  // namespace tessera
