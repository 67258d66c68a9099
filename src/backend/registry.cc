#include "backend/registry.h"

#include "backend/cpu/cpu_backend.h"

namespace tessera {

std::vector<std::string> backend_names() {
  return {"cpu"};
}

Result<std::unique_ptr<Backend>> create_backend(const BackendOptions& options) {
  if (options.device == "cpu") return cpu::make_cpu_backend(options);
  std::string known;
  for (const std::string& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  return invalid_argument("unknown device '" + options.device + "' (this build has: " + known + ")");
}

}  // namespace tessera
