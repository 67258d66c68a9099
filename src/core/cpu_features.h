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
  int physical_cores = 1;
};

// Detected once, thread-safe.
const CpuFeatures& cpu_features();

// The best path this CPU supports. (A lower one is chosen by the CPU
// backend's options, which the CLI takes from TESSERA_ISA.)
Isa best_isa();

// The Isa named `name` ("scalar", "avx2", "avx512"), or nullopt.
std::optional<Isa> isa_from_name(std::string_view name);

// Every path this CPU supports, scalar first (kernel tests iterate over them).
std::vector<Isa> supported_isas();

}  // namespace tessera
