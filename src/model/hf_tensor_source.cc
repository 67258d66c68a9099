#include "model/hf_tensor_source.h"

#include <string_view>

#include "model/tensor_names.h"

namespace tessera {

std::string HfTensorSource::hf_name(const std::string& gguf_name, const ArchitectureInfo& arch) {
  for (const TensorNameEntry& e : kTensorNames) {
    if (!e.per_layer && gguf_name == e.gguf) return hf_tensor_name(e.role);
  }
  if (!gguf_name.starts_with(kGgufLayerPrefix)) return {};
  const size_t dot = gguf_name.find('.', kGgufLayerPrefix.size());
  if (dot == std::string::npos) return {};
  const std::string layer = gguf_name.substr(kGgufLayerPrefix.size(), dot - kGgufLayerPrefix.size());
  const std::string_view suffix = std::string_view(gguf_name).substr(dot + 1);
  for (const TensorNameEntry& e : kTensorNames) {
    if (!e.per_layer || suffix != e.gguf || e.hf.empty()) continue;
    // GGUF stores Phi-3's fused gate_up projection as ffn_up.
    return std::string(kHfLayerPrefix) + layer + "." + std::string(hf_tensor_suffix(e.role, arch.fused_gate_up));
  }
  return {};
}

std::optional<TensorRef> HfTensorSource::find(const std::string& gguf_name) const {
  const std::string name = hf_name(gguf_name, arch_);
  if (name.empty()) return std::nullopt;
  const SafetensorsTensor* t = checkpoint_.find(name);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> shape(t->shape.rbegin(), t->shape.rend());
  return TensorRef{t->name, t->dtype, dtype_name(t->dtype), std::move(shape), t->data};
}

}  // namespace tessera
