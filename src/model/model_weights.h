// The weights of a Llama-family decoder as views into the mapped model file
// (no copy), checked against the config's shapes at load time. Fused
// projections (Phi-3 qkv and gate_up) become row ranges of one matrix.
// Norm weights and biases are small and converted to f32.
#pragma once

#include <vector>

#include "core/weight_view.h"
#include "model/model_config.h"
#include "model/tensor_source.h"
#include "tessera/status.h"

namespace tessera {

struct LayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  WeightView wq;                      // [n_heads * head_dim, n_embd]
  WeightView wk;                      // [n_kv_heads * head_dim, n_embd]
  WeightView wv;                      // [n_kv_heads * head_dim, n_embd]
  std::vector<float> bq, bk, bv;      // [rows of wq / wk / wv]; empty without qkv_bias
  std::vector<float> q_norm, k_norm;  // [head_dim]; empty without qk_norm
  WeightView wo;                      // [n_embd, n_heads * head_dim]
  std::vector<float> ffn_norm;        // [n_embd]
  WeightView w_gate;                  // [n_ff, n_embd]
  WeightView w_up;                    // [n_ff, n_embd]
  WeightView w_down;                  // [n_embd, n_ff]
};

struct ModelWeights {
  WeightView token_embd;           // [n_vocab, n_embd]
  std::vector<float> output_norm;  // [n_embd]
  WeightView output;               // [n_vocab, n_embd]; token_embd when tied
  std::vector<LayerWeights> layers;

  // Bytes of every matrix read per decoded token (embedding row excluded).
  uint64_t matrix_bytes() const;
};

// Binds and validates every tensor. Errors name the tensor: missing
// (kNotFound), wrong shape (kInvalidArgument), unsupported type (kUnimplemented).
Result<ModelWeights> bind_weights(const TensorSource& source, const ModelConfig& config);

}  // namespace tessera
