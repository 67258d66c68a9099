#include "core/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace tessera {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvxVnni:
      return "avxvnni";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

namespace {

// Distinct (physical id, core id) pairs in /proc/cpuinfo; falls back to the
// hardware thread count.
int count_physical_cores() {
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  int phys = 0;
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&]() { return std::atoi(line.c_str() + line.find(':') + 1); };
    if (line.rfind("physical id", 0) == 0) phys = value();
    if (line.rfind("core id", 0) == 0) cores.insert({phys, value()});
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

CpuFeatures detect() {
  CpuFeatures f;
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  f.avx512 = f.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_vnni = f.avx512 && __builtin_cpu_supports("avx512vnni");
  f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
  // AVX-VNNI from CPUID leaf 7 sub-leaf 1 (Clang 14's __builtin_cpu_supports
  // does not know "avxvnni"); the YMM state is the OS's already, as avx2 says.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.avx_vnni = f.avx2 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0) {
    const unsigned base_family = (eax >> 8) & 0xf;
    const unsigned family = base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family;
    const unsigned model = ((eax >> 4) & 0xf) | (base_family == 0xf ? ((eax >> 16) & 0xf) << 4 : 0);
    f.splits_256bit_ops = f.avx2 && ((family == 0x17 && model < 0x30) || family == 0x18);
  }
  f.physical_cores = count_physical_cores();
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out{Isa::kScalar};
  // The AVX-512 path also uses VNNI for int8 dot products.
  if (cpu_features().avx2) out.push_back(Isa::kAvx2);
  if (cpu_features().avx_vnni) out.push_back(Isa::kAvxVnni);
  if (cpu_features().avx512_vnni) out.push_back(Isa::kAvx512);
  return out;
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512}) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

Isa best_isa() {
  return supported_isas().back();
}

}  // namespace tessera
