#include "model/weight_check.h"

#include <vector>

#include "core/finite_check.h"
#include "core/quant_ref.h"
#include "model/tensor_names.h"

namespace tessera {

namespace {

Status nonfinite_error(const std::string& file, const std::string& tensor, int64_t row, const char* unit,
                       const NonFinite& nf) {
  return invalid_argument(file + ": tensor '" + tensor + "' row " + std::to_string(row) + " " + unit + " " +
                          std::to_string(nf.index) + ": " + nf.what);
}

Status check_matrix(const WeightView& m, const std::string& name, bool every_value, const std::string& file) {
  if (m.data == nullptr) return {};
  const size_t row_bytes = dtype_row_bytes(m.dtype, m.cols);
  const auto* base = static_cast<const uint8_t*>(m.data);
  std::vector<float> row(every_value ? static_cast<size_t>(m.cols) : 0);  // [cols]
  for (int64_t r = 0; r < m.rows; ++r) {
    const uint8_t* p = base + static_cast<size_t>(r) * row_bytes;
    if (auto nf = first_nonfinite_scale(m.dtype, p, m.cols)) return nonfinite_error(file, name, r, "block", *nf);
    if (every_value) {
      dequantize_row(m.dtype, p, row.data(), m.cols);
      if (auto nf = first_nonfinite_value(row.data(), m.cols)) return nonfinite_error(file, name, r, "column", *nf);
    }
  }
  return {};
}

Status check_vector(const std::vector<float>& v, const std::string& name, const std::string& file) {
  if (auto nf = first_nonfinite_value(v.data(), static_cast<int64_t>(v.size()))) {
    return nonfinite_error(file, name, 0, "column", *nf);
  }
  return {};
}

}  // namespace

Status check_weights(const ModelWeights& w, bool every_value, const std::string& file) {
  TESSERA_RETURN_IF_ERROR(check_matrix(w.token_embd, gguf_tensor_name(TensorRole::kTokenEmbd), every_value, file));
  TESSERA_RETURN_IF_ERROR(check_vector(w.output_norm, gguf_tensor_name(TensorRole::kOutputNorm), file));
  if (w.output.data != w.token_embd.data) {
    TESSERA_RETURN_IF_ERROR(check_matrix(w.output, gguf_tensor_name(TensorRole::kOutput), every_value, file));
  }
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const int n = static_cast<int>(i);
    const std::pair<const WeightView*, TensorRole> matrices[] = {
        {&l.wq, TensorRole::kAttnQ},      {&l.wk, TensorRole::kAttnK},       {&l.wv, TensorRole::kAttnV},
        {&l.wo, TensorRole::kAttnOutput}, {&l.w_gate, TensorRole::kFfnGate}, {&l.w_up, TensorRole::kFfnUp},
        {&l.w_down, TensorRole::kFfnDown}};
    for (const auto& [m, role] : matrices) {
      TESSERA_RETURN_IF_ERROR(check_matrix(*m, gguf_tensor_name(role, n), every_value, file));
    }
    const std::pair<const std::vector<float>*, TensorRole> vectors[] = {
        {&l.attn_norm, TensorRole::kAttnNorm}, {&l.ffn_norm, TensorRole::kFfnNorm}, {&l.bq, TensorRole::kAttnQBias},
        {&l.bk, TensorRole::kAttnKBias},       {&l.bv, TensorRole::kAttnVBias},     {&l.q_norm, TensorRole::kAttnQNorm},
        {&l.k_norm, TensorRole::kAttnKNorm}};
    for (const auto& [v, role] : vectors) TESSERA_RETURN_IF_ERROR(check_vector(*v, gguf_tensor_name(role, n), file));
  }
  return {};
}

}  // namespace tessera
