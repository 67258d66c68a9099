#include "model/tensor_names.h"

namespace tessera {

std::string gguf_tensor_name(TensorRole role, int layer) {
  const TensorNameEntry& e = tensor_name_entry(role);
  if (!e.per_layer) return std::string(e.gguf);
  return std::string(kGgufLayerPrefix) + std::to_string(layer) + "." + std::string(e.gguf);
}

std::string hf_tensor_name(TensorRole role, int layer, bool fused_gate_up) {
  const std::string_view name = hf_tensor_suffix(role, fused_gate_up);
  if (name.empty() || !tensor_name_entry(role).per_layer) return std::string(name);
  return std::string(kHfLayerPrefix) + std::to_string(layer) + "." + std::string(name);
}

}  // namespace tessera
