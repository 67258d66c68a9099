// Hyperparameters of a Llama-family decoder, read from GGUF metadata
// (`general.architecture` and the `<arch>.*` keys of the GGUF spec).
// Architecture differences are data here, never a copy of the forward pass.
#pragma once

#include <string>
#include <vector>

#include "core/rope_style.h"
#include "formats/gguf_reader.h"
#include "model/architecture.h"
#include "tessera/status.h"

namespace tessera {

// RoPE frequency scaling. kLinear divides positions by `factor` (Chen et al.
// 2023, position interpolation); kLlama3 rescales low frequencies as Llama 3.1
// does (factor, low/high frequency factors, original context length).
enum class RopeScalingType { kNone, kLinear, kLlama3 };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_context = 8192;
};

struct ModelConfig {
  std::string architecture;  // GGUF name, e.g. "llama" or "qwen2"
  ArchitectureInfo arch{};   // what distinguishes the architecture (model/architecture.h)
  std::string name;          // general.name, if present
  int n_vocab = 0;
  int n_embd = 0;  // hidden size
  int n_layers = 0;
  int n_ff = 0;            // feed-forward (intermediate) size
  int n_heads = 0;         // query heads
  int n_kv_heads = 0;      // key/value heads (GQA when < n_heads)
  int head_dim = 0;        // n_embd / n_heads unless the file says otherwise
  int n_rot = 0;           // rotated dims per head (rope.dimension_count)
  int context_length = 0;  // trained context
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  RopeScaling rope_scaling;
  // Per-frequency divisors from the GGUF tensor `rope_freqs.weight` (how
  // llama.cpp stores Llama 3 RoPE scaling); empty when absent. [n_rot / 2].
  std::vector<float> rope_freq_factors;
  RopeStyle rope_style = RopeStyle::kNorm;

  // inv_freq[i] = base^(-2i / n_rot) with RoPE scaling applied, divided by
  // rope_freq_factors[i] when present; [n_rot / 2].
  std::vector<float> rope_inv_freq() const;
};

// Checks relations between the fields (head counts, RoPE dims, positive
// sizes); `source` names the file in errors.
Status validate_model_config(const ModelConfig& c, const std::string& source);

// Reads and validates the hyperparameters, and the optional f32 tensor
// `rope_freqs.weight` [n_rot / 2] (when present it replaces a llama3
// rope.scaling.type). Errors: unsupported architecture
// (kUnimplemented), a missing or inconsistent key (kNotFound /
// kInvalidArgument, naming the key), a rope_freqs.weight that is not f32
// [n_rot / 2] with positive finite values (kInvalidArgument).
Result<ModelConfig> model_config_from_gguf(const GgufFile& gguf);

}  // namespace tessera
