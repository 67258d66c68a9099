// TensorSource: where a model's weights come from, addressed by their GGUF
// tensor names ("blk.3.attn_q.weight"). GGUF files answer directly; Hugging
// Face checkpoints translate the names (model/hf_tensor_source.h). Weight
// binding is written once against this interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "formats/gguf_reader.h"

namespace tessera {

struct TensorRef {
  std::string name;            // the name in the file (for error messages)
  std::optional<DType> dtype;  // nullopt: a type tessera cannot compute with
  std::string type_name;       // the file's name for its type, e.g. "q4_k"
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous dimension
  const void* data = nullptr;  // borrowed from the source's mapping
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  // The tensor with GGUF name `gguf_name`, or nullopt when absent.
  virtual std::optional<TensorRef> find(const std::string& gguf_name) const = 0;
  // The file or directory, for error messages.
  virtual const std::string& source_name() const = 0;
};

class GgufTensorSource final : public TensorSource {
 public:
  explicit GgufTensorSource(const GgufFile& gguf) : gguf_(gguf) {}
  std::optional<TensorRef> find(const std::string& gguf_name) const override;
  const std::string& source_name() const override { return gguf_.name(); }

 private:
  const GgufFile& gguf_;
};

}  // namespace tessera
