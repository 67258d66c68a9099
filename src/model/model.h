// Model: a loaded model — a GGUF file or a Hugging Face directory
// (config.json, *.safetensors, tokenizer.json) — with its hyperparameters,
// weight views and tokenizer. Immutable after load; shareable between threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "formats/safetensors.h"
#include "model/hf_config.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/quantize_model.h"
#include "tessera/status.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

// Options of Model::load.
struct LoadOptions {
  // Requantize every weight matrix except the token embedding after loading
  // to this scheme's types (one block format, or a mix such as q4_k_m: see
  // quantize_weights), kept in memory owned by the Model; matrices whose rows
  // do not fit their type's block keep their type. nullopt: as stored.
  std::optional<QuantScheme> quantize;
  // Check every value of every weight for Inf/NaN (model/weight_check.h;
  // `--check-tensors`). The cheap check (quantized blocks' scales, norms and
  // biases) runs at every load.
  bool check_tensors = false;
};

class Model {
 public:
  // Loads a GGUF file or a Hugging Face model directory. Errors name the file
  // and what is wrong (missing file, corrupt data, unsupported architecture
  // or tensor type, missing tensor, bad shape, bad tokenizer, a non-finite
  // scale or norm weight).
  static Result<std::unique_ptr<Model>> load(const std::string& path);
  // The same, applying `options` (load-time quantization).
  static Result<std::unique_ptr<Model>> load(const std::string& path, const LoadOptions& options);

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  // The GGUF file, or nullptr for a Hugging Face directory.
  const GgufFile* gguf() const { return gguf_.get(); }
  bool has_tokenizer() const { return tokenizer_ != nullptr; }
  // Requires has_tokenizer().
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const GenerationDefaults& generation_defaults() const { return generation_; }
  // End of generation: the tokenizer's EOS/EOT tokens or generation_config's eos ids.
  bool is_eog(int32_t id) const;
  // Every end-of-generation id (for suppressing them before min_tokens).
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  // Load-time quantization (LoadOptions::quantize): the matrices it
  // requantized and those it considered; both 0 without it.
  int32_t quantized_matrices() const { return quantized_.n_quantized(); }
  int32_t quantize_candidates() const { return quantized_.n_considered; }

 private:
  Model() = default;
  Status load_gguf(const std::string& path);
  Status load_hf_dir(const std::string& dir);

  std::string path_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<SafetensorsCheckpoint> checkpoint_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  GenerationDefaults generation_;
  std::vector<int32_t> eog_ids_;
  QuantizedWeights quantized_;  // matrices requantized at load time
};

}  // namespace tessera
