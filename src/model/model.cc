#include "model/model.h"

namespace tessera {

Result<std::unique_ptr<Model>> Model::load(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
  std::unique_ptr<Model> m(new Model(std::move(gguf)));
  TESSERA_ASSIGN_OR_RETURN(m->config_, model_config_from_gguf(m->gguf_));
  if (m->config_.n_vocab == 0) {
    const GgufTensorInfo* emb = m->gguf_.find_tensor("token_embd.weight");
    if (emb == nullptr || emb->shape.size() != 2) return not_found(path + ": missing tensor 'token_embd.weight'");
    m->config_.n_vocab = static_cast<int>(emb->shape[1]);
  }
  TESSERA_ASSIGN_OR_RETURN(m->weights_, bind_weights(m->gguf_, m->config_));
  auto tok = Tokenizer::from_gguf(m->gguf_);
  if (!tok.ok()) return tok.status();
  m->tokenizer_ = std::move(tok).value();
  if (m->tokenizer_->n_vocab() != m->config_.n_vocab) {
    return invalid_argument(path + ": tokenizer has " + std::to_string(m->tokenizer_->n_vocab()) +
                            " tokens but the embedding has " + std::to_string(m->config_.n_vocab));
  }
  return m;
}

}  // namespace tessera
