#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/micro_batch.h"

namespace tessera {

struct Transformer::Layer {
  const float* attn_norm = nullptr;  // [n_embd]
  std::unique_ptr<DeviceMatrix> wq, wk, wv, wo, w_gate, w_up, w_down;
  const float* bq = nullptr;        // [q_dim]; null without qkv_bias
  const float* bk = nullptr;        // [kv_dim]
  const float* bv = nullptr;        // [kv_dim]
  const float* q_norm = nullptr;    // [head_dim]; null without qk_norm
  const float* k_norm = nullptr;    // [head_dim]
  const float* ffn_norm = nullptr;  // [n_embd]
};

Transformer::Transformer(const ModelConfig& config, const ShardPlan& plan, Backend& backend, Communicator& tp,
                         Communicator& world)
    : config_(config), plan_(plan), backend_(backend), comm_(tp), world_(world), inv_freq_(config.rope_inv_freq()) {}

Transformer::~Transformer() = default;

Result<std::unique_ptr<Transformer>> Transformer::create(const ModelConfig& config, const ModelWeights& weights,
                                                         Backend& backend, Communicator& comm) {
  TESSERA_ASSIGN_OR_RETURN(ShardPlan whole, plan_shard(config, weights, ParallelLayout{}, 0));
  return create(config, weights, whole, backend, comm, comm);
}

Result<std::unique_ptr<Transformer>> Transformer::create(const ModelConfig& config, const ModelWeights& weights,
                                                         const ShardPlan& plan, Backend& backend, Communicator& tp,
                                                         Communicator& world) {
  if (static_cast<int>(weights.layers.size()) != plan.n_layers()) {
    return invalid_argument("weights hold " + std::to_string(weights.layers.size()) + " layers; the plan has " +
                            std::to_string(plan.n_layers()));
  }
  std::unique_ptr<Transformer> t(new Transformer(config, plan, backend, tp, world));
  auto prepare = [&](const WeightView& w, MatrixUse use) -> Result<std::unique_ptr<DeviceMatrix>> {
    if (w.rows == 0) return std::unique_ptr<DeviceMatrix>();  // another stage's
    return backend.prepare_matrix(w, use);
  };
  TESSERA_ASSIGN_OR_RETURN(t->token_embd_, prepare(weights.token_embd, MatrixUse::kEmbedding));
  TESSERA_ASSIGN_OR_RETURN(t->output_, prepare(weights.output, MatrixUse::kLogits));

  // Norm weights and biases: one f32 buffer, each vector at a 64-byte boundary.
  std::vector<const std::vector<float>*> vecs{&weights.output_norm};
  for (const LayerWeights& l : weights.layers) {
    for (const std::vector<float>* v : {&l.attn_norm, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm, &l.ffn_norm}) {
      vecs.push_back(v);
    }
  }
  constexpr size_t kAlign = 16;  // floats
  size_t total = 0;
  std::vector<size_t> offsets;
  for (const auto* v : vecs) {
    offsets.push_back(total);
    total += (v->size() + kAlign - 1) / kAlign * kAlign;
  }
  TESSERA_ASSIGN_OR_RETURN(t->vectors_, backend.allocate(total * sizeof(float), BufferKind::kWeights));
  float* base = t->vectors_->f32();
  std::vector<const float*> dev;
  for (size_t i = 0; i < vecs.size(); ++i) {
    if (vecs[i]->empty()) {
      dev.push_back(nullptr);
      continue;
    }
    backend.upload(base + offsets[i], vecs[i]->data(), vecs[i]->size() * sizeof(float));
    dev.push_back(base + offsets[i]);
  }
  t->output_norm_ = dev[0];
  size_t next = 1;
  for (const LayerWeights& l : weights.layers) {
    Layer d;
    d.attn_norm = dev[next++];
    d.bq = dev[next++];
    d.bk = dev[next++];
    d.bv = dev[next++];
    d.q_norm = dev[next++];
    d.k_norm = dev[next++];
    d.ffn_norm = dev[next++];
    TESSERA_ASSIGN_OR_RETURN(d.wq, prepare(l.wq, MatrixUse::kMatmul));
    TESSERA_ASSIGN_OR_RETURN(d.wk, prepare(l.wk, MatrixUse::kMatmul));
    TESSERA_ASSIGN_OR_RETURN(d.wv, prepare(l.wv, MatrixUse::kMatmul));
    TESSERA_ASSIGN_OR_RETURN(d.wo, prepare(l.wo, MatrixUse::kMatmul));
    TESSERA_ASSIGN_OR_RETURN(d.w_gate, prepare(l.w_gate, MatrixUse::kMatmul));
    TESSERA_ASSIGN_OR_RETURN(d.w_up, prepare(l.w_up, MatrixUse::kMatmul));
    TESSERA_ASSIGN_OR_RETURN(d.w_down, prepare(l.w_down, MatrixUse::kMatmul));
    t->layers_.push_back(std::move(d));
  }
  return t;
}

bool Transformer::row_parallel_weights_copied() const {
  return std::all_of(layers_.begin(), layers_.end(),
                     [](const Layer& l) { return !l.wo->reads_source() && !l.w_down->reads_source(); });
}

uint64_t Transformer::matrix_read_bytes() const {
  auto bytes = [](const std::unique_ptr<DeviceMatrix>& m) -> uint64_t { return m ? m->read_bytes() : 0; };
  uint64_t total = bytes(output_);
  for (const Layer& l : layers_) {
    for (const auto* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) total += bytes(*m);
  }
  return total;
}

Status Transformer::validate(const ForwardBatch& b, const KvCache& kv) const {
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

Status Transformer::reserve_activations(int64_t n_tokens, int64_t n_logits) {
  const int64_t e = config_.n_embd;
  const int64_t q_dim = static_cast<int64_t>(plan_.n_heads) * config_.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(plan_.n_kv_heads) * config_.head_dim;
  const int64_t ff = plan_.n_ff;
  const int64_t vocab = plan_.vocab_stride;
  const int64_t gathered = plan_.tp_size > 1 ? n_logits * vocab * plan_.tp_size : 0;
  // Region sizes in floats, each rounded to 64 bytes.
  const int64_t sizes[] = {n_tokens * e,      n_tokens * e,     n_tokens * q_dim, n_tokens * kv_dim,
                           n_tokens * kv_dim, n_tokens * q_dim, n_tokens * ff,    n_tokens * ff,
                           n_logits * e,      n_logits * vocab, gathered};
  float** regions[] = {&x_, &xb_, &q_, &k_, &v_, &att_, &gate_, &up_, &xl_, &logits_, &gathered_};
  int64_t total = 0;
  for (int64_t s : sizes) total += (s + 15) / 16 * 16;
  const size_t bytes = static_cast<size_t>(total) * sizeof(float);
  if (!act_ || act_->bytes() < bytes) {
    act_.reset();  // free first: the old regions are not needed across steps
    TESSERA_ASSIGN_OR_RETURN(act_, backend_.allocate(bytes, BufferKind::kActivations));
  }
  float* p = act_->f32();
  for (size_t i = 0; i < std::size(sizes); ++i) {
    *regions[i] = p;
    p += (sizes[i] + 15) / 16 * 16;
  }
  return {};
}

Status Transformer::attention_block(int layer, int32_t n, KvCache& kv) {
  const Layer& w = layers_[static_cast<size_t>(layer)];
  const int64_t e = config_.n_embd;
  const int64_t hd = config_.head_dim;
  const int64_t q_dim = static_cast<int64_t>(plan_.n_heads) * hd;
  const int64_t kv_dim = static_cast<int64_t>(plan_.n_kv_heads) * hd;
  Backend& be = backend_;
  be.rmsnorm(x_, w.attn_norm, xb_, n, e, config_.rms_eps);
  const MatmulOp qkv[] = {{w.wq.get(), q_}, {w.wk.get(), k_}, {w.wv.get(), v_}};
  be.matmul(qkv, xb_, n);
  if (w.bq != nullptr) {
    be.add_bias(q_, w.bq, n, q_dim);
    be.add_bias(k_, w.bk, n, kv_dim);
    be.add_bias(v_, w.bv, n, kv_dim);
  }
  if (w.q_norm != nullptr) {  // per-head RMSNorm (Qwen3)
    be.rmsnorm(q_, w.q_norm, q_, n * plan_.n_heads, hd, config_.rms_eps);
    be.rmsnorm(k_, w.k_norm, k_, n * plan_.n_kv_heads, hd, config_.rms_eps);
  }
  be.rope(q_, RopeParams{plan_.n_heads, config_.head_dim, config_.n_rot, inv_freq_.data(), config_.rope_style});
  be.rope(k_, RopeParams{plan_.n_kv_heads, config_.head_dim, config_.n_rot, inv_freq_.data(), config_.rope_style});
  be.kv_write(kv, layer, k_, v_);
  const AttentionShape shape{plan_.n_heads, plan_.n_kv_heads, config_.head_dim,
                             1.0f / std::sqrt(static_cast<float>(config_.head_dim))};
  be.paged_attention(kv, layer, shape, q_, att_);
  return row_parallel_residual(*w.wo, att_, n);
}

Status Transformer::row_parallel_residual(const DeviceMatrix& w, const float* in, int32_t n) {
  const int64_t e = config_.n_embd;
  const MatmulOp op[] = {{&w, xb_}};
  backend_.matmul(op, in, n);
  // Row-parallel projection: under tensor parallelism each rank holds a
  // partial sum of xb (Megatron-LM), summed here before the residual add.
  TESSERA_RETURN_IF_ERROR(comm_.all_reduce_sum(backend_, xb_, n * e));
  backend_.add(x_, xb_, n * e);
  return {};
}

Status Transformer::mlp_block(int layer, int32_t n) {
  const Layer& w = layers_[static_cast<size_t>(layer)];
  const int64_t e = config_.n_embd;
  const int64_t ff = plan_.n_ff;
  Backend& be = backend_;
  be.rmsnorm(x_, w.ffn_norm, xb_, n, e, config_.rms_eps);
  const MatmulOp gate_up[] = {{w.w_gate.get(), gate_}, {w.w_up.get(), up_}};
  be.matmul(gate_up, xb_, n);
  be.silu_mul(gate_, up_, gate_, n, ff);
  return row_parallel_residual(*w.w_down, gate_, n);
}

Status Transformer::forward(const ForwardBatch& b, KvCache& kv, std::vector<float>& logits) {
  TESSERA_RETURN_IF_ERROR(validate(b, kv));
  if (plan_.pp_size == 1 || !std::is_sorted(b.logits_rows.begin(), b.logits_rows.end())) {
    return forward_stage(b, kv, logits);
  }
  const auto ranges = micro_batch_ranges(b.n_tokens(), plan_.pp_size, micro_batch_min_rows());
  if (ranges.size() == 1) return forward_stage(b, kv, logits);
  // Pipeline micro-batches (micro_batch.h): this stage runs them in order,
  // passing each on as soon as it is done; the last stage's logits rows come
  // out in b's order.
  logits.clear();
  for (const auto& [begin, end] : ranges) {
    TESSERA_RETURN_IF_ERROR(forward_stage(slice_batch(b, begin, end), kv, micro_logits_));
    logits.insert(logits.end(), micro_logits_.begin(), micro_logits_.end());
  }
  return {};
}

Status Transformer::forward_stage(const ForwardBatch& b, KvCache& kv, std::vector<float>& logits) {
  const int32_t n = b.n_tokens();
  const auto n_logits = static_cast<int64_t>(b.logits_rows.size());
  TESSERA_RETURN_IF_ERROR(reserve_activations(n, n_logits));
  backend_.set_batch(b);
  const size_t x_bytes = static_cast<size_t>(n) * static_cast<size_t>(config_.n_embd) * sizeof(float);
  if (plan_.first_stage()) {
    backend_.embedding(*token_embd_, x_);
  } else {  // the previous stage's residual stream (same tensor-parallel rank)
    TESSERA_RETURN_IF_ERROR(world_.recv(backend_, x_, x_bytes, plan_.world_rank() - plan_.tp_size));
  }
  // The cache holds this stage's layers only: local index layer - layer_begin.
  for (int layer = 0; layer < plan_.n_layers(); ++layer) {
    TESSERA_RETURN_IF_ERROR(attention_block(layer, n, kv));
    TESSERA_RETURN_IF_ERROR(mlp_block(layer, n));
  }
  if (!plan_.last_stage()) {
    logits.clear();
    return world_.send(backend_, x_, x_bytes, plan_.world_rank() + plan_.tp_size);
  }
  return compute_logits(n_logits, logits);
}

Status Transformer::compute_logits(int64_t n_logits, std::vector<float>& logits) {
  const int64_t vocab = config_.n_vocab;
  logits.resize(static_cast<size_t>(n_logits) * static_cast<size_t>(vocab));
  if (n_logits == 0) {
    backend_.synchronize();
    return {};
  }
  backend_.rmsnorm_logits_rows(x_, output_norm_, xl_, config_.n_embd, config_.rms_eps);
  const MatmulOp head[] = {{output_.get(), logits_}};
  backend_.matmul(head, xl_, n_logits);
  if (plan_.tp_size == 1) {
    backend_.download(logits.data(), logits_, logits.size() * sizeof(float));
    return {};
  }
  // Vocabulary-parallel head: rank r's rows [n_logits, n_r] (n_r <= stride)
  // sit at gathered[r]; reassemble [n_logits, n_vocab] on the host.
  const int64_t stride = plan_.vocab_stride;
  TESSERA_RETURN_IF_ERROR(comm_.all_gather(backend_, logits_, n_logits * stride, gathered_));
  std::vector<float>& host = gathered_host_;
  host.resize(static_cast<size_t>(plan_.tp_size * n_logits * stride));
  backend_.download(host.data(), gathered_, host.size() * sizeof(float));
  for (int r = 0; r < plan_.tp_size; ++r) {
    const int64_t begin = r * stride, rows = std::min(stride, vocab - begin);
    for (int64_t i = 0; i < n_logits; ++i) {
      const float* src = host.data() + (r * n_logits * stride + i * rows);
      std::copy(src, src + rows, logits.data() + i * vocab + begin);
    }
  }
  return {};
}

}  // namespace tessera
