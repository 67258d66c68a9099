// tessera/system.h over the CPU feature probe and the backend registry.
#include "tessera/system.h"

#include <fstream>
#include <string>

#include "backend/registry.h"
#include "core/cpu_features.h"

namespace tessera {

int physical_cores() {
  return cpu_features().physical_cores;
}

bool cpu_has_avx512_vnni() {
  return cpu_features().avx512_vnni;
}

bool cpu_has_avx512_bf16() {
  return cpu_features().avx512_bf16;
}

std::vector<std::string> device_names() {
  return backend_names();
}

uint64_t resident_memory_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmRSS:  1234 kB"
  }
  return 0;
}

}  // namespace tessera
