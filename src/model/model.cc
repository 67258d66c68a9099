#include "model/model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/hf_tensor_source.h"
#include "model/quantize_model.h"
#include "model/tensor_names.h"
#include "model/tensor_source.h"
#include "model/weight_check.h"

namespace tessera {

namespace {

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const std::string& path) {
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    TESSERA_RETURN_IF_ERROR(m->load_hf_dir(path));
  } else {
    TESSERA_RETURN_IF_ERROR(m->load_gguf(path));
  }
  TESSERA_RETURN_IF_ERROR(check_weights(m->weights_, /*every_value=*/false, path));
  if (m->tokenizer_ && m->tokenizer_->n_vocab() > m->config_.n_vocab) {
    return invalid_argument(path + ": tokenizer has " + std::to_string(m->tokenizer_->n_vocab()) +
                            " tokens but the embedding has " + std::to_string(m->config_.n_vocab));
  }
  for (int32_t id = 0; id < m->config_.n_vocab; ++id) {
    if (m->is_eog(id)) m->eog_ids_.push_back(id);
  }
  return m;
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Model> m, load(path));
  if (options.check_tensors) TESSERA_RETURN_IF_ERROR(check_weights(m->weights_, /*every_value=*/true, path));
  if (options.quantize) m->quantized_ = quantize_weights(m->weights_, *options.quantize);
  return m;
}

Status Model::load_gguf(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::open(path));
  gguf_ = std::make_unique<GgufFile>(std::move(gguf));
  TESSERA_ASSIGN_OR_RETURN(config_, model_config_from_gguf(*gguf_));
  const std::string emb_name = gguf_tensor_name(TensorRole::kTokenEmbd);
  const GgufTensorInfo* emb = gguf_->find_tensor(emb_name);
  if (emb == nullptr || emb->shape.size() != 2) return not_found(path + ": missing tensor '" + emb_name + "'");
  if (config_.n_vocab == 0) config_.n_vocab = static_cast<int>(emb->shape[1]);
  TESSERA_ASSIGN_OR_RETURN(weights_, bind_weights(GgufTensorSource(*gguf_), config_));
  if (gguf_->find("tokenizer.ggml.model") != nullptr) {  // weights-only files run from token ids
    TESSERA_ASSIGN_OR_RETURN(tokenizer_, Tokenizer::from_gguf(*gguf_));
  }
  return {};
}

Status Model::load_hf_dir(const std::string& dir) {
  const std::filesystem::path d(dir);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(d / "config.json", ec)) {
    return not_found(dir +
                     ": a directory is read as a Hugging Face model, and this one has no config.json "
                     "(give a .gguf file, or a folder with config.json and *.safetensors)");
  }
  TESSERA_ASSIGN_OR_RETURN(std::string config_text, read_text_file((d / "config.json").string()));
  TESSERA_ASSIGN_OR_RETURN(config_, model_config_from_hf_json(config_text, (d / "config.json").string()));
  if (std::filesystem::exists(d / "generation_config.json")) {
    TESSERA_ASSIGN_OR_RETURN(std::string gen_text, read_text_file((d / "generation_config.json").string()));
    TESSERA_ASSIGN_OR_RETURN(generation_,
                             generation_defaults_from_json(gen_text, (d / "generation_config.json").string()));
  }
  TESSERA_ASSIGN_OR_RETURN(SafetensorsCheckpoint ckpt, SafetensorsCheckpoint::open_dir(dir));
  checkpoint_ = std::make_unique<SafetensorsCheckpoint>(std::move(ckpt));
  TESSERA_ASSIGN_OR_RETURN(weights_, bind_weights(HfTensorSource(*checkpoint_, config_.arch, dir), config_));
  if (std::filesystem::exists(d / "tokenizer.json")) {
    const auto tok_config = d / "tokenizer_config.json";
    TESSERA_ASSIGN_OR_RETURN(tokenizer_,
                             Tokenizer::from_hf_json((d / "tokenizer.json").string(),
                                                     std::filesystem::exists(tok_config) ? tok_config.string() : ""));
  }
  return {};
}

bool Model::is_eog(int32_t id) const {
  if (tokenizer_ && tokenizer_->is_eog(id)) return true;
  return std::find(generation_.eos_token_ids.begin(), generation_.eos_token_ids.end(), id) !=
         generation_.eos_token_ids.end();
}

}  // namespace tessera
