#include "formats/gguf_writer.h"

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <unordered_set>
#include <utility>

namespace tessera {

namespace {

constexpr uint32_t kVersion = 3;

// Appends little-endian values, independent of the host's byte order.
class ByteSink {
 public:
  template <typename U>
  void put(U v) {
    static_assert(std::is_unsigned_v<U>);
    for (size_t k = 0; k < sizeof(U); ++k) out_.push_back(static_cast<uint8_t>(v >> (8 * k)));
  }
  void put_f32(float x) { put(std::bit_cast<uint32_t>(x)); }
  void put_f64(double x) { put(std::bit_cast<uint64_t>(x)); }
  void put_string(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) {
    while (out_.size() % alignment != 0) out_.push_back(0);
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Writes the payload of `v` as type `type` (the array element type for
// array elements, whose own `type` must agree).
Status put_value(ByteSink& s, const std::string& key, GgufType type, const GgufValue& v, int depth) {
  if (v.type != type) {
    return invalid_argument(fmt::format("metadata key '{}': array element of type {} in an array of {}", key,
                                        gguf_type_name(v.type), gguf_type_name(type)));
  }
  switch (type) {
    case GgufType::kUint8: s.put(static_cast<uint8_t>(v.u)); break;
    case GgufType::kUint16: s.put(static_cast<uint16_t>(v.u)); break;
    case GgufType::kUint32: s.put(static_cast<uint32_t>(v.u)); break;
    case GgufType::kUint64: s.put(v.u); break;
    case GgufType::kInt8: s.put(static_cast<uint8_t>(v.i)); break;
    case GgufType::kInt16: s.put(static_cast<uint16_t>(v.i)); break;
    case GgufType::kInt32: s.put(static_cast<uint32_t>(v.i)); break;
    case GgufType::kInt64: s.put(static_cast<uint64_t>(v.i)); break;
    case GgufType::kFloat32: s.put_f32(static_cast<float>(v.f)); break;
    case GgufType::kFloat64: s.put_f64(v.f); break;
    case GgufType::kBool: s.put(static_cast<uint8_t>((v.i != 0 || v.u != 0) ? 1 : 0)); break;
    case GgufType::kString: s.put_string(v.str); break;
    case GgufType::kArray: {
      if (depth >= GgufFile::kMaxArrayDepth) {
        return invalid_argument(fmt::format("metadata key '{}': arrays nested deeper than {} levels", key,
                                            GgufFile::kMaxArrayDepth));
      }
      s.put(static_cast<uint32_t>(v.array_type));
      s.put(static_cast<uint64_t>(v.array.size()));
      for (const GgufValue& e : v.array) TESSERA_RETURN_IF_ERROR(put_value(s, key, v.array_type, e, depth + 1));
      break;
    }
    default:
      return invalid_argument(
          fmt::format("metadata key '{}': unknown value type {}", key, static_cast<uint32_t>(type)));
  }
  return {};
}

GgufValue scalar(GgufType t) {
  GgufValue v;
  v.type = t;
  return v;
}

template <typename T, typename Fill>
GgufValue array_of(GgufType elem, const std::vector<T>& items, Fill fill) {
  GgufValue v = scalar(GgufType::kArray);
  v.array_type = elem;
  v.array.reserve(items.size());
  for (const T& x : items) {
    GgufValue e = scalar(elem);
    fill(e, x);
    v.array.push_back(std::move(e));
  }
  return v;
}

}  // namespace

void GgufWriter::add_uint32(const std::string& key, uint32_t v) {
  GgufValue x = scalar(GgufType::kUint32);
  x.u = v;
  x.i = v;
  add_value(key, x);
}

void GgufWriter::add_int32(const std::string& key, int32_t v) {
  GgufValue x = scalar(GgufType::kInt32);
  x.i = v;
  x.u = static_cast<uint64_t>(x.i);
  add_value(key, x);
}

void GgufWriter::add_uint64(const std::string& key, uint64_t v) {
  GgufValue x = scalar(GgufType::kUint64);
  x.u = v;
  x.i = static_cast<int64_t>(v);
  add_value(key, x);
}

void GgufWriter::add_float32(const std::string& key, float v) {
  GgufValue x = scalar(GgufType::kFloat32);
  x.f = v;
  add_value(key, x);
}

void GgufWriter::add_bool(const std::string& key, bool v) {
  GgufValue x = scalar(GgufType::kBool);
  x.i = v ? 1 : 0;
  x.u = v ? 1 : 0;
  add_value(key, x);
}

void GgufWriter::add_string(const std::string& key, const std::string& v) {
  GgufValue x = scalar(GgufType::kString);
  x.str = v;
  add_value(key, x);
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  add_value(key, array_of(GgufType::kString, v, [](GgufValue& e, const std::string& s) { e.str = s; }));
}

void GgufWriter::add_float32_array(const std::string& key, const std::vector<float>& v) {
  add_value(key, array_of(GgufType::kFloat32, v, [](GgufValue& e, float x) { e.f = x; }));
}

void GgufWriter::add_int32_array(const std::string& key, const std::vector<int32_t>& v) {
  add_value(key, array_of(GgufType::kInt32, v, [](GgufValue& e, int32_t x) {
              e.i = x;
              e.u = static_cast<uint64_t>(e.i);
            }));
}

void GgufWriter::add_value(const std::string& key, const GgufValue& v) {
  for (GgufKeyValue& kv : kvs_) {
    if (kv.key == key) {  // replace in place: the reader rejects duplicate keys
      kv.value = v;
      return;
    }
  }
  kvs_.push_back({key, v});
}

void GgufWriter::add_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype,
                            std::vector<uint8_t> bytes) {
  tensors_.push_back({name, std::move(shape), dtype, std::move(bytes)});
}

Result<std::vector<uint8_t>> GgufWriter::to_bytes(uint32_t alignment) const {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return invalid_argument(fmt::format("GGUF alignment {} is not a nonzero power of two", alignment));
  }

  // Validate tensors and lay out their data first: every tensor starts at a
  // multiple of the alignment relative to the data section.
  std::vector<uint64_t> offsets;
  offsets.reserve(tensors_.size());
  uint64_t data_size = 0;
  std::unordered_set<std::string> names;
  for (const Tensor& t : tensors_) {
    if (!names.insert(t.name).second) return invalid_argument(fmt::format("duplicate tensor name '{}'", t.name));
    if (t.shape.size() > GgufFile::kMaxDims) {
      return invalid_argument(
          fmt::format("tensor '{}': {} dimensions (at most {})", t.name, t.shape.size(), GgufFile::kMaxDims));
    }
    int64_t n = 1;
    for (const int64_t d : t.shape) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) {
        return invalid_argument(fmt::format("tensor '{}': bad shape", t.name));
      }
    }
    const int64_t row = t.shape.empty() ? 1 : t.shape[0];
    if (row % dtype_block_elems(t.dtype) != 0) {
      return invalid_argument(fmt::format("tensor '{}': shape[0] = {} is not a multiple of the {} block size {}",
                                          t.name, row, dtype_name(t.dtype), dtype_block_elems(t.dtype)));
    }
    const uint64_t expected = static_cast<uint64_t>(n / dtype_block_elems(t.dtype)) * dtype_block_bytes(t.dtype);
    if (t.bytes.size() != expected) {
      return invalid_argument(fmt::format("tensor '{}': {} bytes given, {} {} elements need {}", t.name,
                                          t.bytes.size(), n, dtype_name(t.dtype), expected));
    }
    offsets.push_back(data_size);
    data_size += (expected + alignment - 1) / alignment * alignment;
  }

  ByteSink s;
  s.put(static_cast<uint32_t>(0x46554747));  // "GGUF"
  s.put(kVersion);
  s.put(static_cast<uint64_t>(tensors_.size()));

  // general.alignment is written when not the default, or replaced by the
  // alignment actually used when the caller copied it from another file.
  std::vector<GgufKeyValue> kvs = kvs_;
  bool have_alignment = false;
  for (GgufKeyValue& kv : kvs) {
    if (kv.key == "general.alignment") {
      kv.value = scalar(GgufType::kUint32);
      kv.value.u = alignment;
      kv.value.i = alignment;
      have_alignment = true;
    }
  }
  if (!have_alignment && alignment != GgufFile::kDefaultAlignment) {
    GgufKeyValue kv{"general.alignment", scalar(GgufType::kUint32)};
    kv.value.u = alignment;
    kv.value.i = alignment;
    kvs.push_back(std::move(kv));
  }
  s.put(static_cast<uint64_t>(kvs.size()));
  for (const GgufKeyValue& kv : kvs) {
    s.put_string(kv.key);
    s.put(static_cast<uint32_t>(kv.value.type));
    TESSERA_RETURN_IF_ERROR(put_value(s, kv.key, kv.value.type, kv.value, 0));
  }

  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    s.put_string(t.name);
    s.put(static_cast<uint32_t>(t.shape.size()));
    for (const int64_t d : t.shape) s.put(static_cast<uint64_t>(d));
    s.put(dtype_to_ggml(t.dtype));
    s.put(offsets[k]);
  }

  s.pad_to(alignment);
  std::vector<uint8_t>& out = s.bytes();
  out.reserve(out.size() + data_size);
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    s.pad_to(alignment);
  }
  return std::move(out);
}

Status GgufWriter::write(const std::string& path, uint32_t alignment) const {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, to_bytes(alignment));
  std::FILE* fp = std::fopen(path.c_str(), "wb");
  if (fp == nullptr) return internal_error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), fp);
  const int write_errno = errno;
  if (std::fclose(fp) != 0 || written != bytes.size()) {
    return internal_error(fmt::format("{}: write failed: {}", path, std::strerror(write_errno)));
  }
  return {};
}

}  // namespace tessera
