#include "model/model_weights.h"

#include <string>

#include "core/quant_ref.h"
#include "model/tensor_names.h"

namespace tessera {

namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

class Binder {
 public:
  explicit Binder(const TensorSource& src) : src_(src) {}

  Result<TensorRef> find(const std::string& name, const std::vector<int64_t>& shape) const {
    auto t = src_.find(name);
    if (!t) return not_found(src_.source_name() + ": missing tensor '" + name + "'");
    if (t->shape != shape) {
      return invalid_argument(src_.source_name() + ": tensor '" + t->name + "' has shape " + shape_string(t->shape) +
                              ", expected " + shape_string(shape) + " (ggml order)");
    }
    if (!t->dtype) {
      return unimplemented(src_.source_name() + ": tensor '" + t->name + "' has type " + t->type_name +
                           ", which tessera cannot compute with yet");
    }
    return *t;
  }

  // A [rows, cols] matrix (ggml shape {cols, rows}).
  Result<WeightView> matrix(const std::string& name, int64_t rows, int64_t cols) const {
    TESSERA_ASSIGN_OR_RETURN(TensorRef t, find(name, {cols, rows}));
    return WeightView{*t.dtype, t.data, rows, cols};
  }

  Result<std::vector<float>> vector_f32(const std::string& name, int64_t n) const {
    TESSERA_ASSIGN_OR_RETURN(TensorRef t, find(name, {n}));
    if (n % dtype_block_elems(*t.dtype) != 0) {
      return invalid_argument(src_.source_name() + ": tensor '" + t.name + "' is not whole blocks");
    }
    std::vector<float> out(static_cast<size_t>(n));
    dequantize_row(*t.dtype, t.data, out.data(), n);
    return out;
  }

 private:
  const TensorSource& src_;
};

// Rows [begin, begin + rows) of a fused matrix.
WeightView row_range(const WeightView& m, int64_t begin, int64_t rows) {
  const auto* base = static_cast<const uint8_t*>(m.data);
  return {m.dtype, base + static_cast<size_t>(begin) * dtype_row_bytes(m.dtype, m.cols), rows, m.cols};
}

Result<LayerWeights> bind_layer(const Binder& b, const ModelConfig& c, int layer) {
  auto name = [layer](TensorRole role) { return gguf_tensor_name(role, layer); };
  const int64_t q_dim = static_cast<int64_t>(c.n_heads) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  LayerWeights l;
  TESSERA_ASSIGN_OR_RETURN(l.attn_norm, b.vector_f32(name(TensorRole::kAttnNorm), c.n_embd));
  if (c.arch.fused_qkv) {
    TESSERA_ASSIGN_OR_RETURN(WeightView qkv, b.matrix(name(TensorRole::kAttnQkv), q_dim + 2 * kv_dim, c.n_embd));
    l.wq = row_range(qkv, 0, q_dim);
    l.wk = row_range(qkv, q_dim, kv_dim);
    l.wv = row_range(qkv, q_dim + kv_dim, kv_dim);
  } else {
    TESSERA_ASSIGN_OR_RETURN(l.wq, b.matrix(name(TensorRole::kAttnQ), q_dim, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.wk, b.matrix(name(TensorRole::kAttnK), kv_dim, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.wv, b.matrix(name(TensorRole::kAttnV), kv_dim, c.n_embd));
  }
  if (c.arch.qkv_bias) {
    TESSERA_ASSIGN_OR_RETURN(l.bq, b.vector_f32(name(TensorRole::kAttnQBias), q_dim));
    TESSERA_ASSIGN_OR_RETURN(l.bk, b.vector_f32(name(TensorRole::kAttnKBias), kv_dim));
    TESSERA_ASSIGN_OR_RETURN(l.bv, b.vector_f32(name(TensorRole::kAttnVBias), kv_dim));
  }
  if (c.arch.qk_norm) {
    TESSERA_ASSIGN_OR_RETURN(l.q_norm, b.vector_f32(name(TensorRole::kAttnQNorm), c.head_dim));
    TESSERA_ASSIGN_OR_RETURN(l.k_norm, b.vector_f32(name(TensorRole::kAttnKNorm), c.head_dim));
  }
  TESSERA_ASSIGN_OR_RETURN(l.wo, b.matrix(name(TensorRole::kAttnOutput), c.n_embd, q_dim));
  TESSERA_ASSIGN_OR_RETURN(l.ffn_norm, b.vector_f32(name(TensorRole::kFfnNorm), c.n_embd));
  if (c.arch.fused_gate_up) {
    TESSERA_ASSIGN_OR_RETURN(WeightView gate_up, b.matrix(name(TensorRole::kFfnUp), 2 * int64_t{c.n_ff}, c.n_embd));
    l.w_gate = row_range(gate_up, 0, c.n_ff);
    l.w_up = row_range(gate_up, c.n_ff, c.n_ff);
  } else {
    TESSERA_ASSIGN_OR_RETURN(l.w_gate, b.matrix(name(TensorRole::kFfnGate), c.n_ff, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.w_up, b.matrix(name(TensorRole::kFfnUp), c.n_ff, c.n_embd));
  }
  TESSERA_ASSIGN_OR_RETURN(l.w_down, b.matrix(name(TensorRole::kFfnDown), c.n_embd, c.n_ff));
  return l;
}

}  // namespace

uint64_t ModelWeights::matrix_bytes() const {
  auto bytes = [](const WeightView& m) { return m.rows * dtype_row_bytes(m.dtype, m.cols); };
  uint64_t total = bytes(output);
  for (const auto& l : layers) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) + bytes(l.w_up) + bytes(l.w_down);
  }
  return total;
}

Result<ModelWeights> bind_weights(const TensorSource& source, const ModelConfig& c) {
  const Binder b(source);
  ModelWeights w;
  TESSERA_ASSIGN_OR_RETURN(w.token_embd, b.matrix(gguf_tensor_name(TensorRole::kTokenEmbd), c.n_vocab, c.n_embd));
  TESSERA_ASSIGN_OR_RETURN(w.output_norm, b.vector_f32(gguf_tensor_name(TensorRole::kOutputNorm), c.n_embd));
  if (source.find(gguf_tensor_name(TensorRole::kOutput))) {
    TESSERA_ASSIGN_OR_RETURN(w.output, b.matrix(gguf_tensor_name(TensorRole::kOutput), c.n_vocab, c.n_embd));
  } else {
    w.output = w.token_embd;
  }
  for (int i = 0; i < c.n_layers; ++i) {
    TESSERA_ASSIGN_OR_RETURN(LayerWeights l, bind_layer(b, c, i));
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace tessera
