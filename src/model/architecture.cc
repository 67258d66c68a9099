#include "model/architecture.h"

#include <array>

namespace tessera {

namespace {

// Mistral GGUF files use general.architecture = "llama"; its HF name maps to it.
constexpr std::array kArchitectures = {
    //               gguf      hf                      gguf rope        bias   qknorm fused_qkv fused_gate_up
    ArchitectureInfo{"llama", "LlamaForCausalLM", RopeStyle::kNorm, false, false, false, false},
    ArchitectureInfo{"llama", "MistralForCausalLM", RopeStyle::kNorm, false, false, false, false},
    ArchitectureInfo{"qwen2", "Qwen2ForCausalLM", RopeStyle::kNeox, true, false, false, false},
    ArchitectureInfo{"qwen3", "Qwen3ForCausalLM", RopeStyle::kNeox, false, true, false, false},
    ArchitectureInfo{"phi3", "Phi3ForCausalLM", RopeStyle::kNeox, false, false, true, true},
};
}  // namespace

const ArchitectureInfo* find_architecture_gguf(std::string_view gguf_name) {
  for (const auto& a : kArchitectures) {
    if (a.gguf_name == gguf_name) return &a;
  }
  return nullptr;
}

const ArchitectureInfo* find_architecture_hf(std::string_view hf_name) {
  for (const auto& a : kArchitectures) {
    if (a.hf_name == hf_name) return &a;
  }
  return nullptr;
}

}  // namespace tessera
