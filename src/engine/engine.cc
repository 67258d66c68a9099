// The public Engine (tessera/engine.h): a Model and an EngineCore behind a pimpl.
#include "tessera/engine.h"

#include <algorithm>

#include "core/dtype.h"
#include "engine/engine_core.h"
#include "kv/kv_cache_spec.h"
#include "model/model.h"

namespace tessera {

struct Engine::Impl {
  std::unique_ptr<Model> model;
  std::unique_ptr<EngineCore> core;
  ModelInfo info;
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& o) {
  LoadOptions load;
  if (!o.quantize.empty()) {
    const auto t = dtype_from_name(o.quantize);
    if (!t || (*t != DType::kQ8_0 && *t != DType::kQ4_0 && *t != DType::kQ4_K)) {
      return invalid_argument("quantize '" + o.quantize + "': expected q8_0, q4_0 or q4_k");
    }
    load.quantize = *t;
  }
  const auto kv_dtype = kv_dtype_from_name(o.kv_cache_dtype);
  if (!kv_dtype)
    return invalid_argument("kv_cache_dtype '" + o.kv_cache_dtype + "': expected f16, bf16, f32, int8 or fp8");
  auto impl = std::make_unique<Impl>();
  TESSERA_ASSIGN_OR_RETURN(impl->model, Model::load(o.model, load));
  const ModelConfig& c = impl->model->config();
  EngineConfig cfg;
  cfg.threads = o.backend.threads;
  cfg.backend = o.backend;
  cfg.kv_cache_memory = o.kv_cache_memory;
  cfg.ctx_size = o.ctx_size > 0 ? o.ctx_size : std::min<int64_t>(c.context_length, 4096);
  cfg.kv_dtype = *kv_dtype;
  cfg.max_num_seqs = o.max_num_seqs;
  cfg.max_num_batched_tokens = o.max_num_batched_tokens;
  cfg.enable_prefix_cache = o.enable_prefix_cache;
  cfg.spec = o.spec;
  TESSERA_ASSIGN_OR_RETURN(impl->core, EngineCore::create(*impl->model, cfg));
  impl->info = ModelInfo{impl->model->path(),
                         c.architecture,
                         c.n_layers,
                         c.n_vocab,
                         c.context_length,
                         impl->core->context_tokens(),
                         impl->model->has_tokenizer()};
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const ModelInfo& Engine::model_info() const {
  return impl_->info;
}

std::string Engine::backend_description() const {
  return impl_->core->backend().describe();
}

Result<std::vector<int32_t>> Engine::tokenize(std::string_view text, bool add_special) const {
  if (!impl_->model->has_tokenizer()) return invalid_argument(impl_->info.path + " has no tokenizer");
  return impl_->model->tokenizer().encode(text, add_special);
}

Result<std::string> Engine::detokenize(const std::vector<int32_t>& ids) const {
  if (!impl_->model->has_tokenizer()) return invalid_argument(impl_->info.path + " has no tokenizer");
  for (int32_t id : ids) {
    if (id < 0 || id >= impl_->info.n_vocab) {
      return invalid_argument("token " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  return impl_->model->tokenizer().decode(ids);
}

Result<uint64_t> Engine::submit(std::vector<int32_t> prompt, const GenerationOptions& options, Callback on_event,
                                int32_t priority) {
  return impl_->core->submit(std::move(prompt), options, std::move(on_event), priority);
}

void Engine::cancel(uint64_t request_id) {
  impl_->core->cancel(request_id);
}
void Engine::run_until_idle() {
  impl_->core->run_until_idle();
}
void Engine::start() {
  impl_->core->start();
}
void Engine::stop() {
  impl_->core->stop();
}
EngineMetrics Engine::metrics() const {
  return impl_->core->metrics();
}

}  // namespace tessera
