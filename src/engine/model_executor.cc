#include "engine/model_executor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "backend/registry.h"
#include "core/cpu_share.h"
#include "dist/mpi_runtime.h"
#include "engine/step_message.h"

namespace tessera {

namespace {

constexpr size_t kMessageBytes = 1024;

// Rank 0 of a parallel run tells the workers to exit (dist::finalize hook).
void send_exit() {
  StepHeader h{static_cast<int64_t>(StepCommand::kExit), 0};
  (void)dist::world().broadcast(&h, sizeof(h), 0);
}

}  // namespace

std::string model_shape(const Model& model) {
  const ModelConfig& c = model.config();
  std::ostringstream out;
  out << c.architecture << " layers " << c.n_layers << " embedding " << c.n_embd << " ffn " << c.n_ff << " heads "
      << c.n_heads << "/" << c.n_kv_heads << " head_dim " << c.head_dim << " vocab " << c.n_vocab;
  if (!model.weights().layers.empty()) out << " " << dtype_name(model.weights().layers.front().wq.dtype);
  return out.str();
}

Status agree(Communicator& world, const Status& mine) {
  int64_t first = mine.ok() ? std::numeric_limits<int64_t>::max() : world.rank();
  TESSERA_RETURN_IF_ERROR(world.all_reduce_min(&first, 1));
  if (first == std::numeric_limits<int64_t>::max()) return {};
  struct {
    int64_t code;
    char text[kMessageBytes];
  } msg{};
  if (world.rank() == first) {
    msg.code = static_cast<int64_t>(mine.code());
    std::strncpy(msg.text, mine.message().c_str(), kMessageBytes - 1);
  }
  TESSERA_RETURN_IF_ERROR(world.broadcast(&msg, sizeof(msg), static_cast<int>(first)));
  if (world.rank() == first) return mine;
  return Status(static_cast<StatusCode>(msg.code), "rank " + std::to_string(first) + ": " + msg.text);
}

Result<std::unique_ptr<ModelExecutor>> ModelExecutor::create(const Model& model, const ExecutorConfig& config,
                                                             std::unique_ptr<Backend> backend) {
  std::unique_ptr<ModelExecutor> e(new ModelExecutor());
  e->backend_ = std::move(backend);
  const int world_size = config.parallel.world_size();
  if (config.parallel.tp_size < 1 || config.parallel.pp_size < 1) {
    return invalid_argument("--tensor-parallel-size and --pipeline-parallel-size must be >= 1");
  }
  if (world_size > 1) {
    if (!dist::initialized()) {
      return invalid_argument("a parallel run (--tensor-parallel-size " + std::to_string(config.parallel.tp_size) +
                              " x --pipeline-parallel-size " + std::to_string(config.parallel.pp_size) +
                              ") runs under MPI: mpirun -np " + std::to_string(world_size) + " tessera ...");
    }
    Communicator& world = dist::world();
    if (world.size() != world_size) {
      return invalid_argument("mpirun started " + std::to_string(world.size()) + " ranks but --tensor-parallel-size " +
                              std::to_string(config.parallel.tp_size) + " x --pipeline-parallel-size " +
                              std::to_string(config.parallel.pp_size) + " needs " + std::to_string(world_size));
    }
    e->world_ = &world;
    // Start the workers' session: the configuration they need as text.
    std::ostringstream out;
    out << "path=" << model.path() << "\nshape=" << model_shape(model) << "\nquantize=" << config.quantize
        << "\ncheck_tensors=" << (config.check_tensors ? 1 : 0) << "\nthreads=" << config.backend.threads
        << "\ndevice=" << config.backend.device
        << "\nisa=" << (config.backend.isa ? static_cast<int>(*config.backend.isa) : -1)
        << "\ntile_kernels=" << (config.backend.tile_kernels ? 1 : 0)
        << "\ndecode_streams=" << config.backend.decode_streams
        << "\nf16_matmul=" << static_cast<int>(config.backend.f16_matmul)
        << "\nkv_dtype=" << static_cast<int>(config.kv_dtype) << "\nkv_cache_memory=" << config.kv_cache_memory
        << "\nctx_size=" << config.ctx_size << "\ntp=" << config.parallel.tp_size << "\npp=" << config.parallel.pp_size
        << "\nsplit=";
    for (size_t i = 0; i < config.parallel.layer_split.size(); ++i) {
      out << (i ? "," : "") << config.parallel.layer_split[i];
    }
    out << "\n";
    std::string text = out.str();
    StepHeader h{static_cast<int64_t>(StepCommand::kStartSession), static_cast<int64_t>(text.size())};
    TESSERA_RETURN_IF_ERROR(world.broadcast(&h, sizeof(h), 0));
    TESSERA_RETURN_IF_ERROR(world.broadcast(text.data(), text.size(), 0));
    // Rank 0 has its model; the workers report whether they loaded theirs.
    TESSERA_RETURN_IF_ERROR(agree(world, Status()));
  }
  TESSERA_RETURN_IF_ERROR(e->build(model, config, 0));
  return e;
}

Status ModelExecutor::build(const Model& model, const ExecutorConfig& config, int rank) {
  const ModelConfig& c = model.config();
  if (world_ != nullptr) {
    // Collective, before anything can fail: the tensor-parallel group of this stage.
    TESSERA_ASSIGN_OR_RETURN(tp_, world_->split(rank / config.parallel.tp_size, rank));
  } else {
    single_ = make_single_rank_communicator();
  }
  Communicator& tp = world_ != nullptr ? *tp_ : *single_;
  Communicator& world = world_ != nullptr ? *world_ : *single_;
  auto sync = [&](const Status& st) { return world_ != nullptr ? agree(*world_, st) : st; };

  KvCacheSpec spec;
  const Status prepared = [&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(ShardPlan plan, plan_shard(c, model.weights(), config.parallel, rank));
    TESSERA_ASSIGN_OR_RETURN(weights_, shard_weights(model.weights(), c, plan));
    if (!backend_) {
      TESSERA_ASSIGN_OR_RETURN(backend_, create_backend(config.backend));
    }
    TESSERA_ASSIGN_OR_RETURN(transformer_, Transformer::create(c, weights_.weights, plan, *backend_, tp, world));
    if (!weights_.owned.empty() && transformer_->row_parallel_weights_copied()) {
      // The backend holds its own copies: the column splits are not read again.
      for (LayerWeights& l : weights_.weights.layers) l.wo.data = l.w_down.data = nullptr;
      std::vector<std::vector<uint8_t>>().swap(weights_.owned);
    }
    spec.n_layers = plan.n_layers();
    spec.n_kv_heads = plan.n_kv_heads;
    spec.head_dim = c.head_dim;
    spec.dtype = config.kv_dtype;
    return size_kv_cache(spec, config.kv_cache_memory, config.ctx_size);
  }();
  TESSERA_RETURN_IF_ERROR(sync(prepared));
  if (world_ != nullptr) {
    // Every rank holds the blocks the smallest can; the collectives are
    // polled on every rank when some rank's threads outnumber its CPUs.
    int64_t words[2] = {spec.num_blocks, cpus_oversubscribed() ? -1 : 0};
    TESSERA_RETURN_IF_ERROR(world_->all_reduce_min(words, 2));
    spec.num_blocks = static_cast<int32_t>(words[0]);
    world_->set_collectives_polled(words[1] < 0);
    tp_->set_collectives_polled(words[1] < 0);
  }
  auto kv = backend_->create_kv_cache(spec);
  TESSERA_RETURN_IF_ERROR(sync(kv.status()));
  kv_ = std::move(kv).value();
  return {};
}

ModelExecutor::~ModelExecutor() {
  // Steps still in flight (an engine stopped mid-run): take their logits, or
  // the last stage would wait forever in its send.
  for (Pending& step : pending_) {
    if (step.receive) (void)step.receive->wait(step.logits.data());
  }
  if (world_ != nullptr && world_->rank() == 0) {
    StepHeader h{static_cast<int64_t>(StepCommand::kEndSession), 0};
    (void)world_->broadcast(&h, sizeof(h), 0);
  }
}

Status ModelExecutor::forward(const ForwardBatch& b, std::vector<float>& logits) {
  if (world_ == nullptr) return transformer_->forward(b, *kv_, logits);
  TESSERA_RETURN_IF_ERROR(issue(b));
  return complete(logits);
}

Status ModelExecutor::issue(const ForwardBatch& b) {
  Pending step;
  if (world_ == nullptr) {
    TESSERA_RETURN_IF_ERROR(transformer_->forward(b, *kv_, step.logits));
    pending_.push_back(std::move(step));
    return {};
  }
  const ShardPlan& p = transformer_->plan();
  const size_t logit_bytes = b.logits_rows.size() * static_cast<size_t>(transformer_->config().n_vocab) * sizeof(float);
  if (!p.last_stage() && logit_bytes > 0) {
    // Posted before the broadcast: the last stage's first tensor-parallel
    // rank sends them as soon as it is done, whatever rank 0 does then.
    TESSERA_ASSIGN_OR_RETURN(step.receive, world_->post_recv(*backend_, logit_bytes, (p.pp_size - 1) * p.tp_size));
  }
  std::vector<int64_t> words = encode_batch(b);
  StepHeader h{static_cast<int64_t>(StepCommand::kStep), static_cast<int64_t>(words.size())};
  TESSERA_RETURN_IF_ERROR(world_->broadcast(&h, sizeof(h), 0));
  TESSERA_RETURN_IF_ERROR(world_->broadcast(words.data(), words.size() * sizeof(int64_t), 0));
  // A batch every rank rejects alike sends no logits (the workers skip it).
  TESSERA_RETURN_IF_ERROR(transformer_->forward(b, *kv_, step.logits));
  if (step.receive) step.logits.resize(logit_bytes / sizeof(float));
  pending_.push_back(std::move(step));
  return {};
}

Status ModelExecutor::complete(std::vector<float>& logits) {
  if (pending_.empty()) return internal_error("ModelExecutor::complete: no step in flight");
  Pending step = std::move(pending_.front());
  pending_.pop_front();
  // (the CPU backend's device memory is host memory)
  if (step.receive) TESSERA_RETURN_IF_ERROR(step.receive->wait(step.logits.data()));
  logits = std::move(step.logits);
  return {};
}

int ModelExecutor::max_in_flight() const {
  return world_ != nullptr && !transformer_->plan().last_stage() ? transformer_->plan().pp_size : 1;
}

CommStats ModelExecutor::comm_stats() const {
  CommStats s;
  for (const Communicator* c : {world_, tp_.get()}) {
    if (c == nullptr) continue;
    const CommStats one = c->stats();
    s.calls += one.calls;
    s.bytes += one.bytes;
    s.seconds += one.seconds;
  }
  return s;
}

Status init_parallel_runtime(int world_size) {
  TESSERA_RETURN_IF_ERROR(dist::init());
  Communicator& world = dist::world();
  if (world.size() != world_size) {
    return invalid_argument("mpirun started " + std::to_string(world.size()) + " ranks; the parallel sizes need " +
                            std::to_string(world_size) + " (tensor-parallel size x pipeline-parallel size)");
  }
  if (world.rank() == 0) dist::set_finalize_hook(send_exit);
  return {};
}

}  // namespace tessera
