#include "model/tensor_source.h"

namespace tessera {

std::optional<TensorRef> GgufTensorSource::find(const std::string& gguf_name) const {
  const GgufTensorInfo* t = gguf_.find_tensor(gguf_name);
  if (t == nullptr) return std::nullopt;
  return TensorRef{t->name, t->dtype, ggml_type_name(t->ggml_type), t->shape, t->data};
}

}  // namespace tessera
