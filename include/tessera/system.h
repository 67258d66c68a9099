// What this machine and this build offer: CPU cores and SIMD features, and
// the backends compiled in (what `--device` and BackendOptions::device accept).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/isa.h"

namespace tessera {

// Physical cores of this machine (CPUID / sysfs; at least 1). The CLI's
// default thread count.
int physical_cores();

// Whether the CPU has AVX-512 VNNI (the int8 dot products the tile kernels use).
bool cpu_has_avx512_vnni();

// Whether the CPU has AVX512-BF16 (vdpbf16ps: BF16 weights, and F16 weights
// under --f16-matmul auto, multiply as bf16 at twice the f32 FMA rate).
bool cpu_has_avx512_bf16();

// Backends this build has, in the registry's order ("cpu" first); what
// BackendOptions::device may name.
std::vector<std::string> device_names();

// This process's resident memory in bytes (VmRSS of /proc/self/status; 0
// where that cannot be read), e.g. a rank's share under tensor parallelism.
uint64_t resident_memory_bytes();

}  // namespace tessera
