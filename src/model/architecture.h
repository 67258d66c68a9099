// The registry of supported architectures. Each entry is data: what
// distinguishes the architecture from the shared Llama-family forward pass
// (biases, per-head norms, fused projections, RoPE pairing) and the names it
// goes by in GGUF (`general.architecture`) and in Hugging Face config.json
// (`architectures[0]`). Adding an architecture is one entry here plus a
// golden test.
#pragma once

#include <string_view>

#include "core/rope_style.h"

namespace tessera {

struct ArchitectureInfo {
  std::string_view gguf_name;  // general.architecture, e.g. "qwen2"
  std::string_view hf_name;    // config.json architectures[0], e.g. "Qwen2ForCausalLM"
  // RoPE pairing of GGUF files: llama.cpp's converter permutes Llama Q/K rows
  // for adjacent-pair rotation; Qwen and Phi-3 keep the NeoX halves.
  // Hugging Face checkpoints always use NeoX halves.
  RopeStyle gguf_rope_style;
  bool qkv_bias;       // biases on the q/k/v projections (Qwen2)
  bool qk_norm;        // RMSNorm on each query and key head before RoPE (Qwen3)
  bool fused_qkv;      // one [q + k + v, n_embd] projection (Phi-3)
  bool fused_gate_up;  // one [2 * n_ff, n_embd] projection, gate rows first (Phi-3)
};

// nullptr when not supported.
const ArchitectureInfo* find_architecture_gguf(std::string_view gguf_name);
const ArchitectureInfo* find_architecture_hf(std::string_view hf_name);

}  // namespace tessera
