// ModelExecutor: runs the model's forward pass for EngineCore, on one rank or
// across the ranks of a tensor- and/or pipeline-parallel run (model/shard.h,
// docs/parallelism.md). It owns the backend, this rank's prepared weights,
// its KV cache memory (its KV heads of its stage's layers) and the
// communicators.
//
// A parallel run is a sequence of *sessions* (one per EngineCore on rank 0):
// rank 0 broadcasts kStartSession with the configuration; every rank loads
// the model, cuts its shard, sizes its KV cache and they agree on the block
// count (the minimum over ranks) — any rank's error becomes every rank's,
// named by rank, so a bad file on one host is one line on rank 0, never a
// hang. Then each step rank 0 broadcasts the ForwardBatch (step_message.h),
// every rank runs its part, and the logits reach rank 0 (all-gathered within
// the last stage; sent to rank 0 when it is not in the last stage).
// Destroying rank 0's executor completes the steps still in flight and ends
// the session; dist::finalize() on rank 0 tells the workers to exit.
//
// A large step runs as pipeline micro-batches (model/micro_batch.h), so the
// stages compute at once. Under P > 1 rank 0 may issue up to P steps before
// completing the oldest (issue/complete; docs/parallelism.md, "Steps in
// flight"): each stage runs the steps in the order rank 0 broadcast them, and
// rank 0 posts the receive of a step's logits before broadcasting it, so the
// last stage's send of step i's logits never waits on rank 0's send of step
// i + 1's activations.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "kv/kv_cache_spec.h"
#include "model/model.h"
#include "model/shard.h"
#include "model/transformer.h"
#include "tessera/backend_options.h"
#include "tessera/status.h"

namespace tessera {

struct ExecutorConfig {
  BackendOptions backend;  // threads set (per rank)
  KvDtype kv_dtype = KvDtype::kF16;
  uint64_t kv_cache_memory = 0;  // bytes per rank; 0: size by ctx_size
  int64_t ctx_size = 4096;
  ParallelLayout parallel;     // tp × pp; 1 × 1 runs in-process without MPI
  std::string quantize;        // the load-time quantization rank 0 used (workers repeat it)
  bool check_tensors = false;  // rank 0's --check-tensors (workers repeat it)
};

class ModelExecutor {
 public:
  // Rank 0 (or the only rank). With parallel.world_size() > 1, MPI must be
  // initialised with exactly that many ranks (dist::init). `backend`: null to
  // create the one config.backend names. Errors: any rank's shard, weight or
  // KV error (prefixed "rank N: " for another rank's), a world size that
  // differs from tp × pp.
  static Result<std::unique_ptr<ModelExecutor>> create(const Model& model, const ExecutorConfig& config,
                                                       std::unique_ptr<Backend> backend = nullptr);
  ~ModelExecutor();

  // One step on every rank; logits of b.logits_rows ([n_logits, n_vocab]) on
  // rank 0. Errors: Transformer::forward's, a communicator's. Only with no
  // step in flight (issue() and complete() in one call).
  Status forward(const ForwardBatch& b, std::vector<float>& logits);
  // Starts a step: broadcasts it, runs rank 0's stage and posts the receive
  // of its logits; at most max_in_flight() steps issued and not completed.
  // `b` may be destroyed on return. Errors: as forward().
  Status issue(const ForwardBatch& b);
  // Finishes the oldest issued step: its logits ([n_logits, n_vocab]) on
  // rank 0. Errors: a communicator's; kInternal with no step in flight.
  Status complete(std::vector<float>& logits);
  // Steps that may be in flight at once: the pipeline's stages (1 unless
  // rank 0 is not the last stage).
  int max_in_flight() const;

  const KvCacheSpec& kv_spec() const { return kv_->spec(); }
  Backend& backend() { return *backend_; }
  const Backend& backend() const { return *backend_; }
  const ShardPlan& plan() const { return transformer_->plan(); }
  bool parallel() const { return world_ != nullptr; }
  // Bytes a decode step reads of this rank's weight matrices, in the
  // backend's layouts (Transformer::matrix_read_bytes) and in the file's
  // (ShardedWeights::matrix_bytes).
  uint64_t matrix_read_bytes() const { return transformer_->matrix_read_bytes(); }
  uint64_t matrix_file_bytes() const { return weights_.matrix_bytes(); }
  // This rank's communication so far (world and tensor-parallel group).
  CommStats comm_stats() const;

 private:
  friend Status run_parallel_worker(const std::string& model_path_override);
  ModelExecutor() = default;
  // Shard, prepare, size and allocate the KV cache, agree with the other ranks.
  Status build(const Model& model, const ExecutorConfig& config, int rank);

  Communicator* world_ = nullptr;         // dist::world(); null on a single rank
  std::unique_ptr<Communicator> single_;  // single rank: the identity communicator
  std::unique_ptr<Communicator> tp_;      // this stage's tensor-parallel group
  std::unique_ptr<Backend> backend_;
  ShardedWeights weights_;
  std::unique_ptr<Transformer> transformer_;
  std::unique_ptr<KvCache> kv_;
  // Issued steps, oldest first: the logits already here (rank 0 in the last
  // stage) or their posted receive.
  struct Pending {
    std::vector<float> logits;             // [n_logits, n_vocab] once here
    std::unique_ptr<PendingRecv> receive;  // null when the logits are here
  };
  std::deque<Pending> pending_;
};

// The shape every rank's model must have in common (architecture, sizes,
// the first projection's type), as one line: checked by the workers against
// rank 0's at each session start.
std::string model_shape(const Model& model);

// Every rank learns the first failing rank's error: a collective over
// `world` (all ranks must call it). ok when every rank's `mine` is ok.
Status agree(Communicator& world, const Status& mine);

// Initialises MPI (dist::init) for a run of `world_size` ranks and, on rank 0,
// registers the exit message to the workers with dist::finalize. Every rank
// calls it before its first engine. Errors: no MPI in the build, a world of
// another size.
Status init_parallel_runtime(int world_size);

// The worker ranks' loop (rank != 0): serves rank 0's sessions until rank 0
// exits. `model_path_override`: the model path this rank opens (its own
// command line's -m, so hosts may keep the file at different paths); empty:
// rank 0's path. Returns ok on a normal exit; an error of this rank
// (a failed step, a protocol error) ends it.
Status run_parallel_worker(const std::string& model_path_override);

}  // namespace tessera
