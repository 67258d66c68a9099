// GGUF writer (version 3): metadata of every type and tensors of any
// tessera DType, aligned per general.alignment. Used by the random-weight
// model generator (bench/) and by tests that synthesise models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "formats/gguf_reader.h"
#include "tessera/status.h"

namespace tessera {

// Metadata is written in insertion order; adding a key again replaces its
// value in place (GGUF forbids duplicate keys). general.alignment is written
// when the alignment passed to write()/to_bytes() is not the default 32, and
// a copied general.alignment is overwritten with the alignment actually used.
// Tensor data is written in insertion order, each tensor padded with zeros to
// the alignment.
class GgufWriter {
 public:
  void add_uint32(const std::string& key, uint32_t v);
  void add_int32(const std::string& key, int32_t v);
  void add_uint64(const std::string& key, uint64_t v);
  void add_float32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_float32_array(const std::string& key, const std::vector<float>& v);
  void add_int32_array(const std::string& key, const std::vector<int32_t>& v);
  // Any value, as the reader returns it (used to copy metadata between files).
  void add_value(const std::string& key, const GgufValue& v);

  // Adds a tensor. `shape` is in ggml order (shape[0] contiguous); `bytes`
  // must hold exactly the tensor's size for `dtype` and is copied.
  void add_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype,
                  std::vector<uint8_t> bytes);

  // Writes the file; kInvalidArgument if a tensor's byte count or shape is
  // wrong (negative dims, more than 4, shape[0] not a multiple of the block
  // size), on duplicate tensor names, an alignment that is not a nonzero power
  // of two, or a malformed value (array element type mismatch); kInternal on
  // an I/O failure.
  Status write(const std::string& path, uint32_t alignment = 32) const;
  // The same bytes in memory.
  Result<std::vector<uint8_t>> to_bytes(uint32_t alignment = 32) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    DType dtype;
    std::vector<uint8_t> bytes;
  };
  std::vector<GgufKeyValue> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace tessera
