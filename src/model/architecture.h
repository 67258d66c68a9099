// The registry of supported architectures: per architecture, the data that
// distinguishes it (RoPE pairing, tensor names). Adding an architecture is one
// entry here plus a golden test.
#pragma once

#include <string_view>

#include "backend/cpu/kernels.h"

namespace tessera {

struct ArchitectureInfo {
  std::string_view name;        // general.architecture value
  cpu::RopeStyle rope_style;    // GGUF llama files permute Q/K for adjacent-pair rotation
};

// nullptr when `name` is not supported.
const ArchitectureInfo* find_architecture(std::string_view name);

}  // namespace tessera
