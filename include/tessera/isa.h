// The CPU's SIMD code paths (BackendOptions::isa).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tessera {

// SIMD code paths, in increasing order of capability: scalar C++ (the
// reference), AVX2 + FMA + F16C, the same with AVX-VNNI (256-bit vpdpbusd:
// Intel since Alder Lake, AMD since Zen 5; bit-identical to AVX2, faster
// int8 tiles), AVX-512 (F/BW/VL/DQ) with VNNI. A CPU may have AVX-512
// without AVX-VNNI (Skylake-SP, Ice Lake, Zen 4): supported_isas() lists
// what it has.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512 = 3 };

// "scalar", "avx2", "avxvnni", "avx512".
const char* isa_name(Isa isa);

// The best path this CPU supports (from CPUID, detected once, thread-safe).
Isa best_isa();

// The Isa named `name` ("scalar", "avx2", "avxvnni", "avx512"), or nullopt.
std::optional<Isa> isa_from_name(std::string_view name);

// Every path this CPU supports, scalar first.
std::vector<Isa> supported_isas();

}  // namespace tessera
