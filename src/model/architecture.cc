#include "model/architecture.h"

#include <array>

namespace tessera {

namespace {
// Mistral GGUF files use general.architecture = "llama".
constexpr std::array kArchitectures = {
    ArchitectureInfo{"llama", cpu::RopeStyle::kNorm},
};
}  // namespace

const ArchitectureInfo* find_architecture(std::string_view name) {
  for (const auto& a : kArchitectures) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace tessera
