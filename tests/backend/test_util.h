// Shared helpers for the CPU backend tests: random rows and ISA naming.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/cpu_features.h"

namespace tessera::cpu::testing {

// Normal(0, scale) values from a fixed seed, so failures reproduce.
inline std::vector<float> random_floats(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

inline std::string isa_label(Isa isa) { return std::string("isa=") + isa_name(isa); }

}  // namespace tessera::cpu::testing
