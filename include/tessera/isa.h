// The CPU's SIMD code paths (BackendOptions::isa).
#pragma once

namespace tessera {

// SIMD code paths, in increasing order of capability: scalar C++ (the
// reference), AVX2 + FMA + F16C, AVX-512 (F/BW/VL/DQ) with VNNI.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);

}  // namespace tessera
