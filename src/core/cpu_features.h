// Run-time instruction-set detection. tessera builds for baseline x86-64 and
// picks a SIMD path per kernel from what CPUID reports, so one binary runs on
// any x86-64 machine.
#pragma once

#include <vector>

namespace tessera {

// SIMD code paths, in increasing order of capability.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* isa_name(Isa isa);

struct CpuFeatures {
  bool avx2 = false;    // with FMA and F16C
  bool avx512 = false;  // F, BW, VL, DQ
  bool avx512_vnni = false;
  int physical_cores = 1;
};

// Detected once, thread-safe.
const CpuFeatures& cpu_features();

// The best path this CPU supports, lowered by the environment variable
// TESSERA_ISA=scalar|avx2|avx512 when set (for tests and benchmarks; a path
// this CPU lacks leaves the best one; the CLI refuses other values).
Isa best_isa();

// Every path this CPU supports, scalar first (kernel tests iterate over them).
std::vector<Isa> supported_isas();

}  // namespace tessera
