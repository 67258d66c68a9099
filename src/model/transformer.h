// Transformer: the Llama-family forward pass over a paged KV cache (token
// embedding, RMSNorm, RoPE, grouped-query attention, SwiGLU MLP, final norm,
// output head), run as one ragged batched step. Touvron et al. 2023 (Llama,
// arXiv:2302.13971); Ainslie et al. 2023 (GQA).
//
// The model graph, written once against the backend contract
// (backend/backend.h): it decides the order of the ops and where each
// activation lives in one device buffer it allocates through the backend,
// and calls the communicator (backend/communicator.h) where a
// tensor-parallel model sums the partial outputs of its row-parallel
// projections (attention output, MLP down). It reads no device memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/communicator.h"
#include "backend/forward_batch.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "model/shard.h"
#include "tessera/status.h"

namespace tessera {

class Transformer {
 public:
  // Prepares every weight on `backend` once (Backend::prepare_matrix: the
  // CPU backend's x16 copy; norms and biases uploaded as f32). Borrows
  // config, backend and comm, which must outlive the result; `weights` (host
  // views into the model file) must too, since a backend may keep reading
  // them. Errors: a weight type the backend cannot run (kUnimplemented,
  // naming the tensor's type), device memory exhaustion.
  static Result<std::unique_ptr<Transformer>> create(const ModelConfig& config, const ModelWeights& weights,
                                                     Backend& backend, Communicator& comm);
  // One rank's part of a tensor- and/or pipeline-parallel model
  // (model/shard.h): `weights` already cut to `plan` (shard_weights), `tp`
  // the tensor-parallel group of the rank's stage (all-reduce after the
  // row-parallel projections, all-gather of the vocabulary-split logits),
  // `world` the communicator whose ranks are world ranks (activations sent
  // stage to stage). The KV cache given to forward() holds the plan's KV
  // heads of the stage's layers only. Borrows everything.
  static Result<std::unique_ptr<Transformer>> create(const ModelConfig& config, const ModelWeights& weights,
                                                     const ShardPlan& plan, Backend& backend, Communicator& tp,
                                                     Communicator& world);
  ~Transformer();

  // Runs one step: writes every token's K/V at its slot, then returns the
  // logits of batch.logits_rows in `logits` ([n_logits, n_vocab], host,
  // resized). Rows do not depend on what else is in the batch. Errors
  // (kInvalidArgument): inconsistent sizes, token ids outside the
  // vocabulary, positions outside the block table, slots outside the cache;
  // (kResourceExhausted): activation memory; a communicator's error.
  // Under pipeline parallelism a stage other than the first receives its
  // input activations from the previous stage, one other than the last
  // sends them on and returns no logits (`logits` cleared); every rank of
  // the last stage returns the whole logits rows. With more than one stage
  // a large batch runs as pipeline micro-batches (model/micro_batch.h), the
  // same on every rank.
  Status forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits);

  // Checks a batch against this model and `kv` without running it.
  Status validate(const ForwardBatch& batch, const KvCache& kv) const;

  const ModelConfig& config() const { return config_; }
  const ShardPlan& plan() const { return plan_; }
  // Whether the backend made its own copy of every row-parallel matrix
  // (attention output, down): then a shard's column-split copies
  // (ShardedWeights::owned) are no longer read and can be freed.
  bool row_parallel_weights_copied() const;
  // Bytes a decode step reads of this rank's prepared matrices (the layers'
  // projections and the output head; DeviceMatrix::read_bytes), the
  // counterpart of ShardedWeights::matrix_bytes in the backend's layouts.
  uint64_t matrix_read_bytes() const;
  Backend& backend() { return backend_; }

 private:
  struct Layer;
  Transformer(const ModelConfig& config, const ShardPlan& plan, Backend& backend, Communicator& tp,
              Communicator& world);
  // forward() on one (micro-)batch, already validated.
  Status forward_stage(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits);
  // The logits rows of this step from the (vocabulary-split) output head.
  Status compute_logits(int64_t n_logits, std::vector<float>& logits);
  Status reserve_activations(int64_t n_tokens, int64_t n_logits);
  Status attention_block(int layer, int32_t n, KvCache& kv);
  Status mlp_block(int layer, int32_t n);
  // x += all_reduce(in · wᵀ): a row-parallel projection (attention output,
  // MLP down) and its residual add; in: [n, w.cols()].
  Status row_parallel_residual(const DeviceMatrix& w, const float* in, int32_t n);

  const ModelConfig& config_;
  ShardPlan plan_;  // this rank's heads, FFN rows, vocabulary rows and layers
  Backend& backend_;
  Communicator& comm_;           // tensor-parallel group
  Communicator& world_;          // pipeline stages (world ranks)
  std::vector<float> inv_freq_;  // [n_rot / 2] (host; RopeParams)

  // Prepared weights.
  std::unique_ptr<DeviceMatrix> token_embd_;  // [n_vocab, n_embd], file layout
  std::unique_ptr<DeviceMatrix> output_;      // [n_vocab, n_embd]
  std::vector<Layer> layers_;
  std::unique_ptr<DeviceBuffer> vectors_;  // every norm weight and bias, f32
  const float* output_norm_ = nullptr;     // [n_embd], in vectors_

  // Activations: one device buffer, regions assigned per step by
  // reserve_activations (device pointers into act_).
  std::unique_ptr<DeviceBuffer> act_;
  std::vector<float> micro_logits_;  // [micro-batch logits rows, n_vocab] host, one micro-batch's
  float* x_ = nullptr;               // [n_tokens, n_embd] residual stream
  float* xb_ = nullptr;              // [n_tokens, n_embd] normed input / projection output
  // Head and FFN counts are this rank's (plan_); n_vocab_l = plan_.vocab_stride.
  float* q_ = nullptr;                // [n_tokens, n_heads * head_dim]
  float* k_ = nullptr;                // [n_tokens, n_kv_heads * head_dim]
  float* v_ = nullptr;                // [n_tokens, n_kv_heads * head_dim]
  float* att_ = nullptr;              // [n_tokens, n_heads * head_dim]
  float* gate_ = nullptr;             // [n_tokens, n_ff]
  float* up_ = nullptr;               // [n_tokens, n_ff]
  float* xl_ = nullptr;               // [n_logits, n_embd]
  float* logits_ = nullptr;           // [n_logits, n_vocab_l] this rank's vocabulary rows
  float* gathered_ = nullptr;         // [tp_size, n_logits, n_vocab_l] every rank's (tensor parallel only)
  std::vector<float> gathered_host_;  // host copy of gathered_, reassembled into the logits (reused per step)
};

}  // namespace tessera
