// GGUF reader (versions 2 and 3), following the GGUF specification
// (github.com/ggml-org/ggml docs/gguf.md): header, typed metadata key/values
// (arrays included), tensor infos, general.alignment and the aligned data
// section. Tensor data is used in place from a memory mapping.
//
// Every read is bounds-checked: a truncated, corrupt or unsupported file
// returns a Status naming the file, the byte offset or tensor, and the
// problem; it never crashes, hangs or reads out of bounds (fuzz/gguf_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "tessera/status.h"

namespace tessera {

// Metadata value types as numbered in the GGUF spec.
enum class GgufType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

const char* gguf_type_name(GgufType t);

// Block layout of a ggml tensor type: `block_elems` elements (along shape[0])
// stored in `block_bytes` bytes. Known for every standard ggml type, including
// those tessera cannot compute with (k-quants, i-quants, integer types), so
// that files using them can still be listed.
struct GgmlTypeLayout {
  int64_t block_elems = 0;
  uint64_t block_bytes = 0;
};
// nullopt for ids that are unknown or were removed from ggml.
std::optional<GgmlTypeLayout> ggml_type_layout(uint32_t ggml_type);

// One metadata value. Scalars are widened: integer types and bool into
// `i` (signed) / `u` (unsigned), floats into `f`. The reader fills both `i`
// and `u` for every integer type and bool (`i` wraps for uint64 values above
// INT64_MAX; as_int() then returns nullopt); the writer reads `u` for
// unsigned types, `i` for signed ones and `i != 0 || u != 0` for bool. Arrays hold elements of one
// type `array_type` in `array` (nested arrays are allowed by the spec).
struct GgufValue {
  GgufType type = GgufType::kUint8;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string str;
  GgufType array_type = GgufType::kUint8;
  std::vector<GgufValue> array;

  // Integer value of any integer type or bool; nullopt otherwise.
  std::optional<int64_t> as_int() const;
  // Value of any numeric type as double; nullopt otherwise.
  std::optional<double> as_float() const;
  // Short printable form (arrays abbreviated), for `tessera inspect`.
  std::string to_string(size_t max_array_items = 8) const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  uint32_t ggml_type = 0;      // raw type id from the file
  std::optional<DType> dtype;  // set when tessera can compute with this type
  uint64_t offset = 0;         // relative to the data section
  uint64_t n_bytes = 0;        // size of the tensor's data
  int64_t n_elements = 0;
  const uint8_t* data = nullptr;  // points into the file's bytes; valid while the GgufFile lives
};

class GgufFile {
 public:
  // Maps and parses `path`. Errors: kNotFound (cannot open), kInvalidArgument
  // (not a regular file), kDataLoss (truncated/corrupt: bad magic, counts or
  // lengths past the end, duplicate keys or tensor names, bad alignment,
  // misaligned, overlapping or out-of-file tensor data, more than kMaxDims
  // dimensions), kUnimplemented (GGUF versions other than 2 and 3, unknown or
  // removed ggml tensor types). Messages start with the file name and give the
  // byte offset and/or the tensor name.
  static Result<GgufFile> open(const std::string& path);
  // Parses bytes owned by the caller, who keeps them alive while the result
  // is used. `name` appears in error messages.
  static Result<GgufFile> parse(const uint8_t* data, size_t size, const std::string& name);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute offset of the data section
  const std::string& name() const { return name_; }
  size_t file_size() const { return size_; }

  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: kNotFound when absent, kInvalidArgument on a type mismatch
  // (message names the key). Integer getters accept every integer type.
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<double>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Limits applied while parsing (exposed for tests).
  static constexpr uint32_t kMaxDims = 4;
  static constexpr int kMaxArrayDepth = 8;
  static constexpr uint64_t kDefaultAlignment = 32;

 private:
  std::shared_ptr<MappedFile> file_;  // null when parsed from caller-owned bytes
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  // Name -> index into metadata_ / tensors_ (the parser rejects duplicates).
  std::unordered_map<std::string, size_t> metadata_index_;
  std::unordered_map<std::string, size_t> tensor_index_;

  friend class GgufParser;
};

}  // namespace tessera
