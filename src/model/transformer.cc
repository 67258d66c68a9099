#include "model/transformer.h"

#include <cmath>
#include <string>

#include "core/quant_ref.h"

namespace tessera {

namespace {
void add_bias(float* x, const float* bias, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += bias[i];
}
}  // namespace

Transformer::Transformer(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool,
                         const cpu::Kernels& kernels)
    : config_(config), weights_(weights), pool_(pool), k_(kernels), inv_freq_(config.rope_inv_freq()) {
  auto prepare = [&](cpu::MatrixView& m) { m = cpu::prepare_matrix(k_, m, pool_, prepared_); };
  for (LayerWeights& l : weights_.layers) {
    for (cpu::MatrixView* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) prepare(*m);
  }
  prepare(weights_.output);  // token_embd keeps the stored layout (rows are dequantized for lookup)
}

Status Transformer::validate(const ForwardBatch& b, const cpu::KvBuffer& kv) const {
  const size_t n = b.token_ids.size();
  if (n == 0) return invalid_argument("empty batch");
  if (b.positions.size() != n || b.slot_mapping.size() != n) {
    return invalid_argument("batch positions/slot_mapping sizes differ from token count");
  }
  for (int32_t id : b.token_ids) {
    if (id < 0 || id >= config_.n_vocab) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(config_.n_vocab - 1) + ")");
    }
  }
  const int64_t slots = kv.spec().capacity_tokens();
  const int32_t bs = kv.spec().block_size;
  int32_t expected_begin = 0;
  for (const auto& s : b.seqs) {
    if (s.token_begin != expected_begin || s.n_tokens <= 0 || s.token_begin + s.n_tokens > static_cast<int32_t>(n)) {
      return invalid_argument("batch sequences must cover the tokens contiguously");
    }
    expected_begin += s.n_tokens;
    for (int32_t t = s.token_begin; t < s.token_begin + s.n_tokens; ++t) {
      const int32_t pos = b.positions[static_cast<size_t>(t)];
      if (pos < 0 || static_cast<int64_t>(pos) >= static_cast<int64_t>(s.block_table.size()) * bs) {
        return invalid_argument("position " + std::to_string(pos) + " is outside the sequence's block table");
      }
      const int64_t slot = b.slot_mapping[static_cast<size_t>(t)];
      if (slot < 0 || slot >= slots)
        return invalid_argument("slot " + std::to_string(slot) + " is outside the KV cache");
    }
    for (int32_t blk : s.block_table) {
      if (blk < 0 || blk >= kv.spec().num_blocks) return invalid_argument("block table holds an invalid block id");
    }
  }
  if (expected_begin != static_cast<int32_t>(n)) return invalid_argument("batch sequences do not cover every token");
  for (int32_t r : b.logits_rows) {
    if (r < 0 || r >= static_cast<int32_t>(n)) return invalid_argument("logits row outside the batch");
  }
  return {};
}

void Transformer::attention_block(int layer, const ForwardBatch& b, cpu::KvBuffer& kv) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const int32_t n = b.n_tokens();
  const int64_t e = config_.n_embd;
  const int64_t q_dim = static_cast<int64_t>(config_.n_heads) * config_.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(config_.n_kv_heads) * config_.head_dim;
  for (int32_t t = 0; t < n; ++t) k_.rmsnorm(&x_[t * e], w.attn_norm.data(), &xb_[t * e], e, config_.rms_eps);
  const cpu::MatmulTarget qkv[] = {{w.wq, q_.data()}, {w.wk, kk_.data()}, {w.wv, vv_.data()}};
  cpu::matmul_multi(pool_, k_, qkv, xb_.data(), n, scratch_);
  for (int32_t t = 0; t < n; ++t) {
    float* q = &q_[t * q_dim];
    float* kr = &kk_[t * kv_dim];
    if (!w.bq.empty()) {
      add_bias(q, w.bq.data(), q_dim);
      add_bias(kr, w.bk.data(), kv_dim);
      add_bias(&vv_[t * kv_dim], w.bv.data(), kv_dim);
    }
    if (!w.q_norm.empty()) {
      const int64_t hd = config_.head_dim;
      for (int h = 0; h < config_.n_heads; ++h)
        k_.rmsnorm(q + h * hd, w.q_norm.data(), q + h * hd, hd, config_.rms_eps);
      for (int h = 0; h < config_.n_kv_heads; ++h)
        k_.rmsnorm(kr + h * hd, w.k_norm.data(), kr + h * hd, hd, config_.rms_eps);
    }
    const int32_t pos = b.positions[static_cast<size_t>(t)];
    k_.rope(&q_[t * q_dim], config_.n_heads, config_.head_dim, config_.n_rot, pos, inv_freq_.data(),
            config_.rope_style);
    k_.rope(&kk_[t * kv_dim], config_.n_kv_heads, config_.head_dim, config_.n_rot, pos, inv_freq_.data(),
            config_.rope_style);
    const int64_t slot = b.slot_mapping[static_cast<size_t>(t)];
    kv.store(k_, layer, slot, &kk_[t * kv_dim], &vv_[t * kv_dim]);
  }
  const cpu::AttentionShape shape{config_.n_heads, config_.n_kv_heads, config_.head_dim,
                                  1.0f / std::sqrt(static_cast<float>(config_.head_dim))};
  cpu::paged_attention(pool_, k_, shape, q_.data(), b.positions.data(), b.seqs, kv, layer, att_.data());
  cpu::matmul(pool_, k_, w.wo, att_.data(), n, xb_.data(), scratch_);
  for (int64_t i = 0; i < n * e; ++i) x_[static_cast<size_t>(i)] += xb_[static_cast<size_t>(i)];
}

void Transformer::mlp_block(int layer, int32_t n) {
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const int64_t e = config_.n_embd;
  const int64_t ff = config_.n_ff;
  for (int32_t t = 0; t < n; ++t) k_.rmsnorm(&x_[t * e], w.ffn_norm.data(), &xb_[t * e], e, config_.rms_eps);
  const cpu::MatmulTarget gate_up[] = {{w.w_gate, gate_.data()}, {w.w_up, up_.data()}};
  cpu::matmul_multi(pool_, k_, gate_up, xb_.data(), n, scratch_);
  for (int32_t t = 0; t < n; ++t) k_.silu_mul(&gate_[t * ff], &up_[t * ff], &gate_[t * ff], ff);
  cpu::matmul(pool_, k_, w.w_down, gate_.data(), n, xb_.data(), scratch_);
  for (int64_t i = 0; i < n * e; ++i) x_[static_cast<size_t>(i)] += xb_[static_cast<size_t>(i)];
}

Status Transformer::forward(const ForwardBatch& b, cpu::KvBuffer& kv, std::vector<float>& logits) {
  TESSERA_RETURN_IF_ERROR(validate(b, kv));
  const int32_t n = b.n_tokens();
  const auto e = static_cast<size_t>(config_.n_embd);
  const auto q_dim = static_cast<size_t>(config_.n_heads) * static_cast<size_t>(config_.head_dim);
  const auto kv_dim = static_cast<size_t>(config_.n_kv_heads) * static_cast<size_t>(config_.head_dim);
  const auto nt = static_cast<size_t>(n);
  x_.resize(nt * e);
  xb_.resize(nt * e);
  q_.resize(nt * q_dim);
  kk_.resize(nt * kv_dim);
  vv_.resize(nt * kv_dim);
  att_.resize(nt * q_dim);
  gate_.resize(nt * static_cast<size_t>(config_.n_ff));
  up_.resize(nt * static_cast<size_t>(config_.n_ff));

  const cpu::MatrixView& emb = weights_.token_embd;
  const size_t emb_row = dtype_row_bytes(emb.dtype, emb.cols);
  for (size_t t = 0; t < nt; ++t) {
    const auto* row = static_cast<const uint8_t*>(emb.data) + static_cast<size_t>(b.token_ids[t]) * emb_row;
    dequantize_row(emb.dtype, row, &x_[t * e], emb.cols);
  }
  for (int layer = 0; layer < config_.n_layers; ++layer) {
    attention_block(layer, b, kv);
    mlp_block(layer, n);
  }
  const size_t n_logits = b.logits_rows.size();
  xl_.resize(n_logits * e);
  for (size_t i = 0; i < n_logits; ++i) {
    k_.rmsnorm(&x_[static_cast<size_t>(b.logits_rows[i]) * e], weights_.output_norm.data(), &xl_[i * e],
               static_cast<int64_t>(e), config_.rms_eps);
  }
  logits.resize(n_logits * static_cast<size_t>(config_.n_vocab));
  if (n_logits > 0) {
    cpu::matmul(pool_, k_, weights_.output, xl_.data(), static_cast<int64_t>(n_logits), logits.data(), scratch_);
  }
  return {};
}

}  // namespace tessera
