// The public Engine (tessera/engine.h): a Model and an EngineCore behind a pimpl.
#include "tessera/engine.h"

#include <algorithm>

#include "core/cpu_share.h"
#include "core/dtype.h"
#include "engine/engine_core.h"
#include "engine/run_to_completion.h"
#include "engine/vocab_impl.h"
#include "kv/kv_cache_spec.h"
#include "model/model.h"

namespace tessera {

struct Engine::Impl {
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft_model;  // speculative decoding's draft (before core: it outlives it)
  std::unique_ptr<EngineCore> core;
  ModelInfo info;
  KvCacheInfo kv;
  std::unique_ptr<Vocab> vocab;  // a view of model->tokenizer(); null without one
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::vector<std::string> load_quantize_type_names() {
  return load_quant_scheme_names();
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& o) {
  LoadOptions load;
  load.check_tensors = o.check_tensors;
  if (!o.quantize.empty()) {
    // The types with tile kernels on every SIMD path (matmul's fast formats), and the mixes.
    load.quantize = load_quant_scheme_from_name(o.quantize);
    if (!load.quantize) {
      std::string names;
      for (const std::string& n : load_quant_scheme_names()) names += (names.empty() ? "" : ", ") + n;
      return invalid_argument("quantize '" + o.quantize + "': expected one of " + names);
    }
  }
  auto kv_dtype = kv_dtype_from_name(o.kv_cache_dtype);
  if (!kv_dtype && o.kv_cache_dtype != "auto")
    return invalid_argument("kv_cache_dtype '" + o.kv_cache_dtype + "': expected auto, f16, bf16, f32, int8 or fp8");
  auto impl = std::make_unique<Impl>();
  TESSERA_ASSIGN_OR_RETURN(impl->model, Model::load(o.model, load));
  const ModelConfig& c = impl->model->config();
  if (!kv_dtype) {
    const auto& layers = impl->model->weights().layers;
    kv_dtype = auto_kv_dtype(layers.empty() ? DType::kF16 : layers.front().wq.dtype);
  }
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
  if (!o.spec.draft_model.empty()) {
    TESSERA_RETURN_IF_ERROR(o.spec.validate());
    LoadOptions draft_load;
    draft_load.check_tensors = o.check_tensors;
    auto draft = Model::load(o.spec.draft_model, draft_load);
    if (!draft.ok()) return Status(draft.status().code(), "--draft-model: " + draft.status().message());
    impl->draft_model = std::move(*draft);
    cfg.draft_model = impl->draft_model.get();
  }
  cfg.parallel.tp_size = o.parallel.tensor_parallel_size;
  cfg.parallel.pp_size = o.parallel.pipeline_parallel_size;
  cfg.parallel.layer_split = o.parallel.pp_layer_split;
  cfg.quantize = o.quantize;
  cfg.check_tensors = o.check_tensors;
  TESSERA_ASSIGN_OR_RETURN(impl->core, EngineCore::create(*impl->model, cfg));
  ModelInfo& info = impl->info;
  info.path = impl->model->path();
  info.architecture = c.architecture;
  info.n_layers = c.n_layers;
  info.n_vocab = c.n_vocab;
  info.trained_context = c.context_length;
  info.context = impl->core->context_tokens();
  info.has_tokenizer = impl->model->has_tokenizer();
  info.n_embd = c.n_embd;
  info.n_ff = c.n_ff;
  info.n_heads = c.n_heads;
  info.n_kv_heads = c.n_kv_heads;
  info.head_dim = c.head_dim;
  // The whole model's matrices in the backend's layouts. A rank of a
  // parallel run holds only its shard: the model's file bytes are scaled by
  // that shard's read/file ratio. Exact for tensor-parallel shards (each holds
  // a slice of every matrix); a pipeline stage's mix of matrices is not the
  // whole model's (rank 0's stage lacks the output head, which may keep its
  // file layout): on tl-f16 with int16 panels, 2 stages read 0.2% high.
  const ModelExecutor& executor = impl->core->executor();
  const uint64_t read = executor.matrix_read_bytes(), shard_file = executor.matrix_file_bytes();
  info.weight_bytes = executor.parallel() && shard_file > 0
                          ? static_cast<uint64_t>(static_cast<double>(impl->model->weights().matrix_bytes()) *
                                                  static_cast<double>(read) / static_cast<double>(shard_file))
                          : read;
  info.quantized_matrices = impl->model->quantized_matrices();
  info.quantize_candidates = impl->model->quantize_candidates();
  const KvCacheSpec& spec = impl->core->kv_spec();
  impl->kv = KvCacheInfo{kv_dtype_name(spec.dtype), spec.num_blocks,        spec.block_size,
                         spec.capacity_tokens(),    spec.bytes_per_token(), spec.total_bytes()};
  if (impl->model->has_tokenizer()) impl->vocab = make_vocab_view(impl->model->tokenizer());
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const ModelInfo& Engine::model_info() const {
  return impl_->info;
}

std::string Engine::backend_description() const {
  std::string d = impl_->core->backend().describe();
  const ModelExecutor& e = impl_->core->executor();
  if (e.parallel()) {
    const ShardPlan& p = e.plan();
    // The KV cache and threads this engine reports are rank 0's.
    d += ", rank 0 of " + std::to_string(p.tp_size * p.pp_size) + " (tensor parallel " + std::to_string(p.tp_size) +
         " x pipeline parallel " + std::to_string(p.pp_size) + "; KV cache per rank)";
  }
  // core/cpu_share.h: this process's waits sleep instead of spinning.
  if (cpus_oversubscribed()) d += ", threads outnumber CPUs: waits sleep";
  return d;
}

const KvCacheInfo& Engine::kv_cache_info() const {
  return impl_->kv;
}

const Vocab* Engine::vocab() const {
  return impl_->vocab.get();
}

double Engine::measure_read_bandwidth() {
  return impl_->core->backend().measure_read_bandwidth();
}

Result<RequestOutcome> Engine::generate(std::vector<int32_t> prompt, const GenerationOptions& options,
                                        const std::function<void(const StreamEvent&)>& on_step) {
  return run_to_completion(*impl_->core, prompt, options, on_step);
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
