#include "model/model_weights.h"

#include <string>

#include "core/quant_ref.h"

namespace tessera {

namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Result<const GgufTensorInfo*> find(const GgufFile& g, const std::string& name, std::vector<int64_t> shape) {
  const GgufTensorInfo* t = g.find_tensor(name);
  if (t == nullptr) return not_found(g.name() + ": missing tensor '" + name + "'");
  if (t->shape != shape) {
    return invalid_argument(g.name() + ": tensor '" + name + "' has shape " + shape_string(t->shape) + ", expected " +
                            shape_string(shape));
  }
  if (!t->dtype) {
    return unimplemented(g.name() + ": tensor '" + name + "' has type " + ggml_type_name(t->ggml_type) +
                         ", which tessera cannot compute with yet");
  }
  return t;
}

// A [rows, cols] matrix (ggml shape {cols, rows}).
Result<cpu::MatrixView> matrix(const GgufFile& g, const std::string& name, int64_t rows, int64_t cols) {
  TESSERA_ASSIGN_OR_RETURN(const GgufTensorInfo* t, find(g, name, {cols, rows}));
  return cpu::MatrixView{*t->dtype, t->data, rows, cols};
}

Result<std::vector<float>> vector_f32(const GgufFile& g, const std::string& name, int64_t n) {
  TESSERA_ASSIGN_OR_RETURN(const GgufTensorInfo* t, find(g, name, {n}));
  if (n % dtype_block_elems(*t->dtype) != 0) return invalid_argument(g.name() + ": tensor '" + name + "' is not whole blocks");
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(*t->dtype, t->data, out.data(), n);
  return out;
}

}  // namespace

uint64_t ModelWeights::matrix_bytes() const {
  auto bytes = [](const cpu::MatrixView& m) { return m.rows * dtype_row_bytes(m.dtype, m.cols); };
  uint64_t total = bytes(output);
  for (const auto& l : layers) {
    total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.w_gate) + bytes(l.w_up) + bytes(l.w_down);
  }
  return total;
}

Result<ModelWeights> bind_weights(const GgufFile& g, const ModelConfig& c) {
  ModelWeights w;
  const int64_t q_dim = static_cast<int64_t>(c.n_heads) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_kv_heads) * c.head_dim;
  TESSERA_ASSIGN_OR_RETURN(w.token_embd, matrix(g, "token_embd.weight", c.n_vocab, c.n_embd));
  TESSERA_ASSIGN_OR_RETURN(w.output_norm, vector_f32(g, "output_norm.weight", c.n_embd));
  if (g.find_tensor("output.weight") != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(w.output, matrix(g, "output.weight", c.n_vocab, c.n_embd));
  } else {
    w.output = w.token_embd;
  }
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights l;
    TESSERA_ASSIGN_OR_RETURN(l.attn_norm, vector_f32(g, p + "attn_norm.weight", c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.wq, matrix(g, p + "attn_q.weight", q_dim, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.wk, matrix(g, p + "attn_k.weight", kv_dim, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.wv, matrix(g, p + "attn_v.weight", kv_dim, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.wo, matrix(g, p + "attn_output.weight", c.n_embd, q_dim));
    TESSERA_ASSIGN_OR_RETURN(l.ffn_norm, vector_f32(g, p + "ffn_norm.weight", c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.w_gate, matrix(g, p + "ffn_gate.weight", c.n_ff, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.w_up, matrix(g, p + "ffn_up.weight", c.n_ff, c.n_embd));
    TESSERA_ASSIGN_OR_RETURN(l.w_down, matrix(g, p + "ffn_down.weight", c.n_embd, c.n_ff));
    w.layers.push_back(std::move(l));
  }
  return w;
}

}  // namespace tessera
