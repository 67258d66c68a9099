// Model: a loaded GGUF model — the mapped file, its hyperparameters, weight
// views and tokenizer. Immutable after load and shareable between threads.
#pragma once

#include <memory>
#include <string>

#include "formats/gguf_reader.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"
#include "tessera/status.h"

namespace tessera {

class Model {
 public:
  // Maps and validates `path`. Errors name the file and what is wrong
  // (missing file, corrupt GGUF, unsupported architecture or tensor type,
  // missing tensor, bad shape, bad tokenizer).
  static Result<std::unique_ptr<Model>> load(const std::string& path);

  const GgufFile& gguf() const { return gguf_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  Model(GgufFile gguf) : gguf_(std::move(gguf)) {}

  GgufFile gguf_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace tessera
