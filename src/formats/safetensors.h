// Safetensors reader (huggingface/safetensors, "Format" in its README): an
// 8-byte little-endian uint64 header size N, N bytes of UTF-8 JSON header
//
//   {"<tensor name>": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]},
//    ..., "__metadata__": {"<key>": "<string value>", ...}}
//
// and then the byte buffer; `data_offsets` are relative to the start of that
// buffer (byte 8 + N of the file), `end` exclusive. Tensor data is row-major
// little-endian and used in place from a memory mapping.
//
// The header is parsed with a streaming (SAX) nlohmann::json parser that
// validates the structure as it goes, so memory stays proportional to what is
// kept, nothing is thrown out of this API, and duplicate keys are detected:
// a duplicate tensor name, a duplicate field inside a tensor entry and a
// duplicate __metadata__ key are each an error (a DOM parse would silently
// keep one of them). Unknown fields inside a tensor entry are skipped, as the
// reference implementation does.
//
// Deliberately more lenient than the reference implementation: the tensors
// need not tile the buffer contiguously (gaps and trailing bytes after the
// last tensor are accepted); overlapping tensors are rejected.
//
// Every failure is a Status whose message starts with the file name; corrupt
// or hostile input never crashes, hangs, reads out of bounds or allocates much
// more than the input size (tests/formats/safetensors_test.cc,
// fuzz/safetensors_fuzz.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "tessera/status.h"

namespace tessera {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;  // kF32, kF16 or kBF16 (the only dtypes accepted)
  // As in the file: row-major, shape.back() is the contiguous dimension.
  // NOTE: this is the reverse of GGUF/ggml order (GgufTensorInfo::shape[0] is
  // contiguous). An empty shape is a scalar (one element).
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the file's bytes; valid while the owning file/checkpoint lives
  uint64_t n_bytes = 0;           // == n_elements * dtype size
  int64_t n_elements = 0;         // product of shape (1 for a scalar, 0 if any dim is 0)
};

// One .safetensors file.
class SafetensorsFile {
 public:
  // Maps and parses `path`. The mapping is owned by the result (and by
  // copies/moves of it); tensor `data` pointers stay valid while it lives.
  // Errors (messages start with the path):
  //  - kNotFound / kInvalidArgument: cannot open / not a regular file (MappedFile);
  //  - kDataLoss: file shorter than 8 bytes; header size larger than the file
  //    or than kMaxHeaderBytes; header not valid JSON/UTF-8 or not an object;
  //    a tensor entry that is not an object, lacks dtype/shape/data_offsets or
  //    has them with wrong JSON types; a non-string __metadata__ value;
  //    duplicate tensor names or keys; an unknown dtype string; a negative or
  //    too large dimension, more than kMaxDims dimensions or an element/byte
  //    count overflow; data_offsets that are not two integers begin <= end,
  //    or end past the buffer; end - begin != elements * dtype size;
  //    overlapping tensors;
  //  - kUnimplemented: a valid safetensors dtype other than F32/F16/BF16
  //    (e.g. I64, F8_E4M3); the message names the tensor and the dtype.
  static Result<SafetensorsFile> open(const std::string& path);
  // Parses `size` bytes at `data`, owned by the caller, who keeps them alive
  // while the result is used. `name` starts every error message. Same errors
  // as open() (without the file-system ones).
  static Result<SafetensorsFile> parse(const uint8_t* data, size_t size, const std::string& name);

  // Tensors in the order the header lists them.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  // The tensor called `name`, or nullptr.
  const SafetensorsTensor* find(std::string_view name) const;
  // The header's "__metadata__" string map (empty when absent or null).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  const std::string& name() const { return name_; }
  size_t file_size() const { return size_; }
  uint64_t header_size() const { return header_size_; }      // N
  uint64_t data_offset() const { return 8 + header_size_; }  // absolute offset of the byte buffer

  // Limits applied while parsing. kMaxHeaderBytes is the reference
  // implementation's limit; kMaxDims is far above what models use.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;
  static constexpr size_t kMaxDims = 16;

 private:
  std::shared_ptr<MappedFile> file_;  // null when parsed from caller-owned bytes
  size_t size_ = 0;
  std::string name_;
  uint64_t header_size_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> index into tensors_
  std::map<std::string, std::string> metadata_;

  friend class SafetensorsParser;
};

// A Hugging Face model directory: either one `model.safetensors`, or shards
// described by `model.safetensors.index.json` ({"weight_map": {tensor: file},
// "metadata": {...}}; file names are relative to the directory). The index
// is preferred when both exist.
class SafetensorsCheckpoint {
 public:
  // Opens every file of the checkpoint in `dir`. Errors (messages name the
  // file): kNotFound when `dir` has neither file, or a shard named by the
  // index is missing; kDataLoss when the index is not valid JSON, lacks an
  // object "weight_map" with string values, has a duplicate key, names a
  // shard by an absolute path or with "..", lists a tensor that is absent
  // from (or found in another than) its shard, or when one tensor name occurs
  // in two shards; and every SafetensorsFile::open error of each shard.
  // Tensors present in a shard but not listed in the index are kept.
  static Result<SafetensorsCheckpoint> open_dir(const std::string& dir);

  // The tensor called `name` in any shard, or nullptr. Pointers stay valid
  // while this checkpoint (or what it was moved into) lives.
  const SafetensorsTensor* find(std::string_view name) const;
  // Every tensor of every shard, sorted by name.
  std::vector<const SafetensorsTensor*> tensors() const;
  // The opened files: one for a single-file checkpoint, else one per shard
  // (sorted by file name).
  const std::vector<SafetensorsFile>& files() const { return files_; }

  static constexpr uint64_t kMaxIndexBytes = 100'000'000;

 private:
  struct Location {
    size_t file = 0;
    size_t tensor = 0;
  };
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Location, std::less<>> index_;
};

}  // namespace tessera
