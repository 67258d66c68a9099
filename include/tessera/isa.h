// The CPU's SIMD code paths (BackendOptions::isa).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tessera {

// SIMD code paths, in increasing order of capability: scalar C++ (the
// reference), AVX2 + FMA + F16C, AVX-512 (F/BW/VL/DQ) with VNNI.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);

// The best path this CPU supports (from CPUID, detected once, thread-safe).
Isa best_isa();

// The Isa named `name` ("scalar", "avx2", "avx512"), or nullopt.
std::optional<Isa> isa_from_name(std::string_view name);

// Every path this CPU supports, scalar first.
std::vector<Isa> supported_isas();

}  // namespace tessera
