// EngineCore: serves many requests at once with continuous batching. One step
// loop — schedule -> forward -> sample -> update -> stream — admits and
// retires sequences at every step, mixes prefill chunks into decode batches
// (chunked prefill, Agrawal et al. 2023 Sarathi), reuses the KV blocks of
// shared prefixes, and preempts by recomputation when KV memory runs out
// (Orca, Yu et al. 2022; vLLM, Kwon et al. 2023). Every row of the forward
// pass is computed the same way whatever else runs beside it, so a request's
// tokens do not depend on batching, prefix-cache hits or chunk sizes.
// With speculative decoding (EngineConfig::spec) a decoding sequence's
// proposed tokens are verified in the same step (docs/architecture.md,
// "Speculative decoding"); greedy and seeded output is unchanged.
//
// Under pipeline parallelism (P > 1) the step is split into issue and
// complete: up to P steps of disjoint sequences are in flight, sharing the
// sequences when each share has EngineConfig::pp_step_min_seqs or more, so
// the stages work at once
// (docs/parallelism.md, "Steps in flight"). With P = 1 every step is issued
// and completed at once, as before.
//
// Threading: submit() and cancel() may be called from any thread; step() and
// the event callbacks run on the engine thread (start()) or the caller's
// thread (run_until_idle()).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "engine/model_executor.h"
#include "engine/proposer.h"
#include "engine/sequence.h"
#include "engine/spec_goodput.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "model/transformer.h"
#include "sched/scheduler.h"
#include "tessera/backend_options.h"
#include "tessera/engine_metrics.h"
#include "tessera/generation_options.h"
#include "tessera/request_event.h"
#include "tessera/speculative_options.h"

namespace tessera {

struct EngineConfig {
  int threads = 1;               // backend.threads is set from this
  BackendOptions backend;        // device and its switches (--device; TESSERA_ISA etc. in the CLI)
  uint64_t kv_cache_memory = 0;  // bytes; 0: size by ctx_size
  int64_t ctx_size = 4096;       // tokens of one sequence (and the cache, when kv_cache_memory is 0)
  KvDtype kv_dtype = KvDtype::kF16;
  int32_t max_num_seqs = 64;
  int32_t max_num_batched_tokens = 512;
  bool enable_prefix_cache = true;
  SpeculativeOptions spec;  // speculative decoding (--spec ...); validated by create()
  // Tensor/pipeline parallelism (model/shard.h); world_size() > 1 needs MPI
  // initialised with that many ranks (init_parallel_runtime) and this
  // EngineCore on rank 0.
  ParallelLayout parallel;
  // Under P > 1 the running sequences are shared among P steps in flight
  // only when each share has at least this many (-1: micro_batch_min_rows(),
  // 32): a smaller decode step is bandwidth-bound and costs a stage about as
  // much as the whole batch, so splitting it would only multiply the weight
  // reads (docs/parallelism.md, "Steps in flight"). 1 always shares (tests).
  int32_t pp_step_min_seqs = -1;
  std::string quantize;        // the model's load-time quantization, repeated by the worker ranks
  bool check_tensors = false;  // --check-tensors, repeated by the worker ranks
  // Test hook: makes each speculating sequence's proposer instead of
  // spec.method's (speculation is on when either is set).
  ProposerFactory proposer_factory;
  // Test hook: the forward time (ms) the cost-aware switch records for a
  // step of this many rows, instead of the measured one (deterministic
  // decisions in tests).
  std::function<double(int64_t rows)> step_ms_for_test;
  // spec.effective_method() "draft": the draft model (borrowed; it outlives
  // the engine), loaded by the caller from spec.draft_model.
  const Model* draft_model = nullptr;
};

class EngineCore {
 public:
  using Callback = std::function<void(const RequestEvent&)>;

  // Borrows `model`; creates the backend config.backend names (with
  // config.threads threads), prepares the weights on it once and allocates
  // the KV cache there. Errors: invalid config, an unknown device, a weight
  // type the backend cannot run, KV cache allocation.
  static Result<std::unique_ptr<EngineCore>> create(const Model& model, const EngineConfig& config);
  // The same on a backend the caller made (a test backend, for instance);
  // config.backend is then ignored.
  static Result<std::unique_ptr<EngineCore>> create(const Model& model, const EngineConfig& config,
                                                    std::unique_ptr<Backend> backend);
  ~EngineCore();

  // Queues a request (thread-safe). Errors, at once: invalid options, an
  // empty prompt, or one that can never fit (prompt + max_tokens beyond the
  // context or the whole cache). `priority`: lower runs first.
  Result<uint64_t> submit(std::vector<int32_t> prompt, const GenerationOptions& options, Callback on_event,
                          int32_t priority = 0);
  // Cancels a request (thread-safe); its blocks are freed before the next step.
  void cancel(uint64_t request_id);

  // Runs one step (issues one, completes the oldest in flight, or both);
  // returns false when there was nothing to do and nothing is in flight.
  bool step();
  // Steps until every submitted request has finished.
  void run_until_idle();
  // Runs the step loop on a background thread until stop().
  void start();
  void stop();

  EngineMetrics metrics() const;
  // Steps issued and not yet completed (engine thread; 0 or 1 unless P > 1).
  int steps_in_flight() const { return static_cast<int>(in_flight_.size()); }
  // Whether a choice of the request is in a step in flight (engine thread; for tests).
  bool in_flight(uint64_t request_id) const;
  // Block accounting between steps, with no step in flight (engine thread): the KV manager's own
  // invariants, every block's reference count equal to the block tables that
  // hold it, and every unfinished sequence holding exactly the blocks of its
  // computed tokens (none past them: rejected proposals were rolled back),
  // and the proposer's own accounting (the draft model's KV blocks). kInternal naming the first violation. For tests.
  Status check_invariants() const;
  const KvCacheSpec& kv_spec() const { return executor_->kv_spec(); }
  // The backend the model runs on (e.g. for its describe() line).
  const Backend& backend() const { return executor_->backend(); }
  Backend& backend() { return executor_->backend(); }
  // Rank 0's part of the model and its communication (parallel runs).
  const ModelExecutor& executor() const { return *executor_; }
  int64_t context_tokens() const { return config_.ctx_size; }
  int32_t vocab_size() const { return model_.config().n_vocab; }
  // The batch proposer of speculative decoding (null when off).
  const BatchProposer* proposer() const { return proposer_.get(); }

 private:
  struct Request;
  EngineCore(const Model& model, const EngineConfig& config, std::unique_ptr<ModelExecutor> executor,
             std::unique_ptr<BatchProposer> proposer);
  void drain_inbox();
  void finish_request(Request& r, const Status& error, bool cancelled = false);
  // Rows of the step's logits that belong to one scheduled sequence.
  struct ItemRows {
    int32_t first = 0;     // first row in the step's logits
    int32_t n = 0;         // rows (0, 1, or the chunk for prompt logits)
    int32_t position = 0;  // position of the first row's token
  };
  // A step issued and not yet completed.
  struct InFlightStep {
    SchedulerOutput out;
    std::vector<ItemRows> rows;  // [out.scheduled.size()]
    int64_t prompt_tokens = 0;   // prefill rows (0: a decode-only step)
    int64_t n_tokens = 0;        // rows of the batch
  };
  // The step's batch; fills f.rows and the token counts.
  ForwardBatch build_batch(InFlightStep& f) const;
  // Schedules and issues a step when one can run; false when none could.
  bool issue_step();
  // Completes the oldest step in flight: samples, streams, retires.
  void complete_step();
  // Post-processing of a completed step's logits.
  void apply_step(const InFlightStep& f, const std::vector<float>& logits);
  // Fails the requests of a step whose forward pass failed.
  void fail_step(const InFlightStep& f, const Status& st);
  bool any_in_flight(const Request& r) const;
  bool speculation_on() const { return proposer_ != nullptr; }
  // Asks the proposers of decoding sequences for this step's tokens (none
  // when more than spec.disable_batch_size sequences run), as many as the
  // cost-aware switch finds worth verifying (spec_goodput.h).
  void propose();
  // The goodput-maximising cap on this step's proposals per sequence, given
  // each item's acceptance estimate and what it could take (item.k, or the
  // length of what it proposed when `proposed`); counts the step as
  // declined when the cap is 0.
  int32_t lookahead_cap(std::span<const ProposeItem> items, bool proposed);
  // Copies scheduler and KV gauges into metrics_ (read by other threads).
  void publish_gauges();

  const Model& model_;
  EngineConfig config_;
  std::unique_ptr<ModelExecutor> executor_;
  std::unique_ptr<BatchProposer> proposer_;  // null: no speculation
  KvCacheManager kv_;
  Scheduler scheduler_;

  std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;  // engine thread only
  std::deque<InFlightStep> in_flight_;                               // oldest first (engine thread)
  // Wall time and communication counted up to here: a step's forward time
  // is from the later of its issue and the previous completion to its own
  // completion, so overlapping steps are not counted twice.
  std::chrono::steady_clock::time_point mark_time_;
  CommStats mark_comm_;
  mutable std::mutex mu_;  // guards inbox_, cancels_, metrics_
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Request>> inbox_;
  std::vector<uint64_t> cancels_;
  EngineMetrics metrics_;
  // The cost-aware switch's measurements (engine thread): forward ms per
  // step by its rows, and the draft's ms per drafted token by the number of
  // sequences it drafted for.
  StepTimeModel step_ms_;
  StepTimeModel draft_ms_per_token_;
  int64_t spec_decisions_ = 0;  // steps the switch decided (every kExploreInterval-th tries the largest cap)
  std::atomic<uint64_t> next_id_{1};
  uint64_t arrivals_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera
