// Transformer: the Llama-family forward pass over a paged KV cache (token
// embedding, RMSNorm, RoPE, grouped-query attention, SwiGLU MLP, final norm,
// output head), run as one ragged batched step on the CPU kernels.
// Touvron et al. 2023 (Llama, arXiv:2302.13971); Ainslie et al. 2023 (GQA).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kv_buffer.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "tessera/status.h"

namespace tessera {

class Transformer {
 public:
  // Borrows config, pool, kernels and the memory `weights` views; they must
  // outlive this object. Matrices that `kernels` reads faster in another
  // layout (Q4_0 / Q8_0 / Q4_K with tile kernels: cpu::prepare_matrix) are copied
  // into that layout here, into memory this object owns (parallel on pool).
  Transformer(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool, const cpu::Kernels& kernels);

  // Runs one step: writes every token's K/V at its slot, then returns the
  // logits of batch.logits_rows in `logits` ([n_logits, n_vocab], resized).
  // Rows do not depend on what else is in the batch. Errors
  // (kInvalidArgument): inconsistent sizes, token ids outside the vocabulary,
  // positions outside the block table, slots outside the cache.
  Status forward(const ForwardBatch& batch, cpu::KvBuffer& kv, std::vector<float>& logits);

  // Checks a batch against this model and `kv` without running it.
  Status validate(const ForwardBatch& batch, const cpu::KvBuffer& kv) const;

  const ModelConfig& config() const { return config_; }

 private:
  void attention_block(int layer, const ForwardBatch& batch, cpu::KvBuffer& kv);
  void mlp_block(int layer, int32_t n);

  const ModelConfig& config_;
  ModelWeights weights_;                        // the model's views, matrices replaced by prepared copies
  std::vector<std::vector<uint8_t>> prepared_;  // owns the prepared copies
  ThreadPool& pool_;
  const cpu::Kernels& k_;
  std::vector<float> inv_freq_;  // [n_rot / 2]

  // Activations, resized per step.
  std::vector<float> x_;          // [n_tokens, n_embd] residual stream
  std::vector<float> xb_;         // [n_tokens, n_embd] normed input / projection output
  std::vector<float> q_;          // [n_tokens, n_heads * head_dim]
  std::vector<float> kk_;         // [n_tokens, n_kv_heads * head_dim]
  std::vector<float> vv_;         // [n_tokens, n_kv_heads * head_dim]
  std::vector<float> att_;        // [n_tokens, n_heads * head_dim]
  std::vector<float> gate_;       // [n_tokens, n_ff]
  std::vector<float> up_;         // [n_tokens, n_ff]
  std::vector<float> xl_;         // [n_logits, n_embd]
  std::vector<uint8_t> scratch_;  // quantized activations for matmul
};

}  // namespace tessera
