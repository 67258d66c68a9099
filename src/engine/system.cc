// tessera/system.h over the CPU feature probe and the backend registry.
#include "tessera/system.h"

#include "backend/registry.h"
#include "core/cpu_features.h"

namespace tessera {

int physical_cores() {
  return cpu_features().physical_cores;
}

bool cpu_has_avx512_vnni() {
  return cpu_features().avx512_vnni;
}

std::vector<std::string> device_names() {
  return backend_names();
}

}  // namespace tessera
