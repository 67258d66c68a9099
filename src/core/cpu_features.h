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
  // The core runs 256-bit AVX operations as two 128-bit halves: AMD Zen 1
  // and Zen+ (family 17h, models below 30h) and Hygon Dhyana (family 18h),
  // from CPUID leaf 1's family and model. There vcvtph2ps costs FP-pipe
  // slots that F16 tiles pay again per token group (docs/quantization.md
  // rounds 10 and 14).
  bool splits_256bit_ops = false;
  int physical_cores = 1;
};

// Detected once, thread-safe.
const CpuFeatures& cpu_features();

// best_isa(), isa_from_name() and supported_isas() are declared in tessera/isa.h.

}  // namespace tessera
