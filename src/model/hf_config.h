// Hugging Face config.json and generation_config.json -> ModelConfig, for the
// Llama, Mistral, Qwen2, Qwen3 and Phi-3 families. RoPE settings are read
// either way transformers writes them: `rope_theta` / `rope_scaling` at the
// top level, or the newer `rope_parameters` object.
#pragma once

#include <string>
#include <vector>

#include "model/model_config.h"
#include "tessera/status.h"

namespace tessera {

// Defaults a model's authors ship in generation_config.json (and config.json).
struct GenerationDefaults {
  std::vector<int32_t> eos_token_ids;  // end-of-sequence ids (int or list in the file)
  int32_t bos_token_id = -1;
  float temperature = -1;  // < 0: not given
  float top_p = -1;
  int32_t top_k = -1;
};

// Parses config.json text. `source` names the file in errors: invalid JSON,
// an unsupported architecture (kUnimplemented, naming it), a missing or
// mistyped required field (naming it), inconsistent sizes.
Result<ModelConfig> model_config_from_hf_json(const std::string& json_text, const std::string& source);

// Parses generation_config.json text (eos_token_id, bos_token_id, temperature,
// top_p, top_k; other fields ignored). Errors: invalid JSON or mistyped fields.
Result<GenerationDefaults> generation_defaults_from_json(const std::string& json_text, const std::string& source);

}  // namespace tessera
