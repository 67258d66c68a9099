#include "formats/gguf_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "formats/byte_reader.h"

namespace tessera {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian uint32

// Smallest encoding of one value of type `t`, used to bound element counts by
// the bytes left before anything is allocated. Strings need their 8-byte
// length; a nested array its 4-byte type and 8-byte count.
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64: return true;
    default: return false;
  }
}

bool is_unsigned(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 ||
         t == GgufType::kUint64;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "unknown";
}

std::optional<GgmlTypeLayout> ggml_type_layout(uint32_t ggml_type) {
  // Block sizes from the block structs each type is defined by in the GGUF
  // spec; ids 4, 5, 31-33 and 36-38 were removed from ggml.
  switch (ggml_type) {
    case 0: return GgmlTypeLayout{1, 4};       // f32
    case 1: return GgmlTypeLayout{1, 2};       // f16
    case 2: return GgmlTypeLayout{32, 18};     // q4_0
    case 3: return GgmlTypeLayout{32, 20};     // q4_1
    case 6: return GgmlTypeLayout{32, 22};     // q5_0
    case 7: return GgmlTypeLayout{32, 24};     // q5_1
    case 8: return GgmlTypeLayout{32, 34};     // q8_0
    case 9: return GgmlTypeLayout{32, 36};     // q8_1
    case 10: return GgmlTypeLayout{256, 84};   // q2_k
    case 11: return GgmlTypeLayout{256, 110};  // q3_k
    case 12: return GgmlTypeLayout{256, 144};  // q4_k
    case 13: return GgmlTypeLayout{256, 176};  // q5_k
    case 14: return GgmlTypeLayout{256, 210};  // q6_k
    case 15: return GgmlTypeLayout{256, 292};  // q8_k
    case 16: return GgmlTypeLayout{256, 66};   // iq2_xxs
    case 17: return GgmlTypeLayout{256, 74};   // iq2_xs
    case 18: return GgmlTypeLayout{256, 98};   // iq3_xxs
    case 19: return GgmlTypeLayout{256, 50};   // iq1_s
    case 20: return GgmlTypeLayout{32, 18};    // iq4_nl
    case 21: return GgmlTypeLayout{256, 110};  // iq3_s
    case 22: return GgmlTypeLayout{256, 82};   // iq2_s
    case 23: return GgmlTypeLayout{256, 136};  // iq4_xs
    case 24: return GgmlTypeLayout{1, 1};      // i8
    case 25: return GgmlTypeLayout{1, 2};      // i16
    case 26: return GgmlTypeLayout{1, 4};      // i32
    case 27: return GgmlTypeLayout{1, 8};      // i64
    case 28: return GgmlTypeLayout{1, 8};      // f64
    case 29: return GgmlTypeLayout{256, 56};   // iq1_m
    case 30: return GgmlTypeLayout{1, 2};      // bf16
    case 34: return GgmlTypeLayout{256, 54};   // tq1_0
    case 35: return GgmlTypeLayout{256, 66};   // tq2_0
    case 39: return GgmlTypeLayout{32, 17};    // mxfp4
    default: return std::nullopt;
  }
}

std::optional<int64_t> GgufValue::as_int() const {
  if (type == GgufType::kBool) return (i != 0 || u != 0) ? 1 : 0;
  if (!is_integer(type)) return std::nullopt;
  if (is_unsigned(type)) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return i;
}

std::optional<double> GgufValue::as_float() const {
  if (type == GgufType::kFloat32 || type == GgufType::kFloat64) return f;
  if (!is_integer(type)) return std::nullopt;
  return is_unsigned(type) ? static_cast<double>(u) : static_cast<double>(i);
}

std::string GgufValue::to_string(size_t max_array_items) const {
  switch (type) {
    case GgufType::kBool: return (i != 0 || u != 0) ? "true" : "false";
    case GgufType::kFloat32: return fmt::format("{}", static_cast<float>(f));
    case GgufType::kFloat64: return fmt::format("{}", f);
    case GgufType::kString: return quote(str);
    case GgufType::kArray: {
      std::string out = "[";
      const size_t n = std::min(array.size(), max_array_items);
      for (size_t k = 0; k < n; ++k) {
        if (k > 0) out += ", ";
        out += array[k].to_string(max_array_items);
      }
      if (array.size() > n) out += fmt::format("{}... ({} items)", n > 0 ? ", " : "", array.size());
      out += "]";
      return out;
    }
    default: return is_unsigned(type) ? std::to_string(u) : std::to_string(i);
  }
}

// Parses one file into a GgufFile; a class so that the helpers share the
// cursor and the file name.
class GgufParser {
 public:
  GgufParser(const uint8_t* data, size_t size, const std::string& name)
      : data_(data), size_(size), name_(name), r_(data, size, name_) {}

  Result<GgufFile> parse() {
    GgufFile f;
    f.data_ = data_;
    f.size_ = size_;
    f.name_ = name_;

    TESSERA_ASSIGN_OR_RETURN(const uint32_t magic, r_.read<uint32_t>("magic"));
    if (magic != kGgufMagic) {
      return r_.error_at(0, fmt::format("not a GGUF file (magic {:02x} {:02x} {:02x} {:02x}, expected \"GGUF\")",
                                        magic & 0xff, (magic >> 8) & 0xff, (magic >> 16) & 0xff, magic >> 24));
    }
    TESSERA_ASSIGN_OR_RETURN(f.version_, r_.read<uint32_t>("version"));
    if (f.version_ != 2 && f.version_ != 3) {
      std::string why = fmt::format("{}: GGUF version {} is not supported (only versions 2 and 3)", name_, f.version_);
      if (f.version_ == 1) why += "; GGUF v1 predates 64-bit counts, convert the file with a current tool";
      if ((f.version_ & 0xffff) == 0 && f.version_ != 0) why += "; the file may be big-endian, which is not supported";
      return unimplemented(why);
    }

    const size_t n_tensors_at = r_.offset();
    TESSERA_ASSIGN_OR_RETURN(const uint64_t n_tensors, r_.read<uint64_t>("tensor count"));
    const size_t n_kv_at = r_.offset();
    TESSERA_ASSIGN_OR_RETURN(const uint64_t n_kv, r_.read<uint64_t>("metadata count"));
    // A key/value needs at least 8 (key length) + 4 (type) + 1 bytes, a tensor
    // info 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
    if (n_kv > r_.remaining() / 13) {
      return r_.error_at(n_kv_at, fmt::format("metadata count {} exceeds file size ({} bytes left)", n_kv,
                                              r_.remaining()));
    }
    if (n_tensors > r_.remaining() / 24) {
      return r_.error_at(n_tensors_at, fmt::format("tensor count {} exceeds file size ({} bytes left)",
                                                   n_tensors, r_.remaining()));
    }

    f.metadata_.reserve(static_cast<size_t>(n_kv));
    for (uint64_t k = 0; k < n_kv; ++k) {
      const size_t at = r_.offset();
      GgufKeyValue kv;
      TESSERA_ASSIGN_OR_RETURN(kv.key, r_.read_string("metadata key"));
      const size_t type_at = r_.offset();
      TESSERA_ASSIGN_OR_RETURN(const uint32_t type, r_.read<uint32_t>("metadata value type"));
      if (!valid_type(type)) {
        return r_.error_at(type_at, fmt::format("metadata key '{}': unknown value type {}", kv.key, type));
      }
      TESSERA_ASSIGN_OR_RETURN(kv.value, read_value(static_cast<GgufType>(type), 0));
      if (!f.metadata_index_.emplace(kv.key, f.metadata_.size()).second) {
        return r_.error_at(at, fmt::format("duplicate metadata key '{}'", kv.key));
      }
      f.metadata_.push_back(std::move(kv));
    }

    TESSERA_RETURN_IF_ERROR(read_alignment(f));

    f.tensors_.reserve(static_cast<size_t>(n_tensors));
    std::vector<size_t> info_offsets;  // where each tensor info starts, for messages
    info_offsets.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t k = 0; k < n_tensors; ++k) {
      info_offsets.push_back(r_.offset());
      TESSERA_ASSIGN_OR_RETURN(GgufTensorInfo t, read_tensor_info());
      if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second) {
        return r_.error_at(info_offsets.back(), fmt::format("duplicate tensor name '{}'", t.name));
      }
      f.tensors_.push_back(std::move(t));
    }

    // The data section starts at the end of the header rounded up to the
    // alignment (alignment <= 2^31 and the offset <= size, so no overflow).
    const uint64_t header_end = r_.offset();
    f.data_offset_ = (header_end + f.alignment_ - 1) / f.alignment_ * f.alignment_;
    TESSERA_RETURN_IF_ERROR(place_tensors(f, info_offsets));
    return f;
  }

 private:
  Result<GgufValue> read_value(GgufType type, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
      case GgufType::kUint8: return unsigned_value<uint8_t>(v);
      case GgufType::kUint16: return unsigned_value<uint16_t>(v);
      case GgufType::kUint32: return unsigned_value<uint32_t>(v);
      case GgufType::kUint64: return unsigned_value<uint64_t>(v);
      case GgufType::kInt8: return signed_value<int8_t>(v);
      case GgufType::kInt16: return signed_value<int16_t>(v);
      case GgufType::kInt32: return signed_value<int32_t>(v);
      case GgufType::kInt64: return signed_value<int64_t>(v);
      case GgufType::kFloat32: {
        TESSERA_ASSIGN_OR_RETURN(const float x, r_.read<float>("float32 value"));
        v.f = x;
        return v;
      }
      case GgufType::kFloat64: {
        TESSERA_ASSIGN_OR_RETURN(v.f, r_.read<double>("float64 value"));
        return v;
      }
      case GgufType::kBool: {
        const size_t at = r_.offset();
        TESSERA_ASSIGN_OR_RETURN(const uint8_t b, r_.read<uint8_t>("bool value"));
        if (b > 1) return r_.error_at(at, fmt::format("bool value {} is neither 0 nor 1", b));
        v.i = b;
        v.u = b;
        return v;
      }
      case GgufType::kString: {
        TESSERA_ASSIGN_OR_RETURN(v.str, r_.read_string("string"));
        return v;
      }
      case GgufType::kArray: return read_array(std::move(v), depth);
    }
    return r_.error("unknown value type");
  }

  template <typename T>
  Result<GgufValue> unsigned_value(GgufValue& v) {
    TESSERA_ASSIGN_OR_RETURN(const T x, r_.read<T>("integer value"));
    v.u = x;
    v.i = static_cast<int64_t>(v.u);
    return std::move(v);
  }
  template <typename T>
  Result<GgufValue> signed_value(GgufValue& v) {
    TESSERA_ASSIGN_OR_RETURN(const T x, r_.read<T>("integer value"));
    v.i = x;
    v.u = static_cast<uint64_t>(v.i);
    return std::move(v);
  }

  Result<GgufValue> read_array(GgufValue v, int depth) {
    const size_t at = r_.offset();
    if (depth >= GgufFile::kMaxArrayDepth) {
      return r_.error_at(at, fmt::format("arrays nested deeper than {} levels", GgufFile::kMaxArrayDepth));
    }
    TESSERA_ASSIGN_OR_RETURN(const uint32_t elem_type, r_.read<uint32_t>("array element type"));
    if (!valid_type(elem_type)) return r_.error_at(at, fmt::format("unknown array element type {}", elem_type));
    v.array_type = static_cast<GgufType>(elem_type);
    const size_t count_at = r_.offset();
    TESSERA_ASSIGN_OR_RETURN(const uint64_t count, r_.read<uint64_t>("array length"));
    // Checked before reserving: a hostile count must not cause a huge allocation.
    if (count > r_.remaining() / min_value_bytes(v.array_type)) {
      return r_.error_at(count_at, fmt::format("array length {} of {} exceeds file size ({} bytes left)", count,
                                               gguf_type_name(v.array_type), r_.remaining()));
    }
    v.array.reserve(static_cast<size_t>(count));
    for (uint64_t k = 0; k < count; ++k) {
      TESSERA_ASSIGN_OR_RETURN(GgufValue e, read_value(v.array_type, depth + 1));
      v.array.push_back(std::move(e));
    }
    return v;
  }

  Status read_alignment(GgufFile& f) {
    const GgufValue* a = f.find("general.alignment");
    if (a == nullptr) return {};
    const std::optional<int64_t> n = a->as_int();
    // The spec stores it as uint32; any integer type is accepted but it must
    // be a power of two that fits one, so that rounding cannot overflow.
    if (!n || a->type == GgufType::kBool || *n <= 0 || *n > (int64_t{1} << 31) || (*n & (*n - 1)) != 0) {
      return data_loss(fmt::format("{}: general.alignment = {} is not a nonzero power of two (at most 2^31)",
                                   name_, a->to_string()));
    }
    f.alignment_ = static_cast<uint64_t>(*n);
    return {};
  }

  Result<GgufTensorInfo> read_tensor_info() {
    const size_t at = r_.offset();
    GgufTensorInfo t;
    TESSERA_ASSIGN_OR_RETURN(t.name, r_.read_string("tensor name"));
    const auto fail = [&](const std::string& what) {
      return r_.error_at(at, fmt::format("tensor '{}': {}", t.name, what));
    };
    TESSERA_ASSIGN_OR_RETURN(const uint32_t n_dims, r_.read<uint32_t>("tensor dimension count"));
    if (n_dims > GgufFile::kMaxDims) {
      return fail(fmt::format("{} dimensions (at most {} are supported)", n_dims, GgufFile::kMaxDims));
    }
    t.shape.resize(n_dims);
    int64_t n_elements = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < n_dims; ++d) {
      TESSERA_ASSIGN_OR_RETURN(const uint64_t dim, r_.read<uint64_t>("tensor dimension"));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return fail(fmt::format("dimension {} is {}, which is negative as int64", d, dim));
      }
      t.shape[d] = static_cast<int64_t>(dim);
      overflow = overflow || __builtin_mul_overflow(n_elements, t.shape[d], &n_elements);
    }
    // Checked after all dims: a zero dimension makes the product 0 even when
    // a partial product overflowed, but such shapes are corrupt anyway.
    if (overflow) return fail("element count overflows int64");
    t.n_elements = n_elements;

    TESSERA_ASSIGN_OR_RETURN(t.ggml_type, r_.read<uint32_t>("tensor type"));
    const std::optional<GgmlTypeLayout> layout = ggml_type_layout(t.ggml_type);
    if (!layout) {
      return unimplemented(fmt::format("{}: offset {}: tensor '{}': unsupported ggml type {} ({})", name_, at,
                                       t.name, t.ggml_type, ggml_type_name(t.ggml_type)));
    }
    t.dtype = dtype_from_ggml(t.ggml_type);
    const int64_t row = t.shape.empty() ? 1 : t.shape[0];
    if (row % layout->block_elems != 0) {
      return fail(fmt::format("shape[0] = {} is not a multiple of the {} block size {}", row,
                              ggml_type_name(t.ggml_type), layout->block_elems));
    }
    const uint64_t n_blocks = static_cast<uint64_t>(n_elements / layout->block_elems);
    if (__builtin_mul_overflow(n_blocks, layout->block_bytes, &t.n_bytes)) {
      return fail("byte size overflows uint64");
    }
    TESSERA_ASSIGN_OR_RETURN(t.offset, r_.read<uint64_t>("tensor data offset"));
    return t;
  }

  // Checks each tensor's data range and points `data` into the file.
  Status place_tensors(GgufFile& f, const std::vector<size_t>& info_offsets) {
    std::vector<size_t> order(f.tensors_.size());
    for (size_t k = 0; k < f.tensors_.size(); ++k) {
      GgufTensorInfo& t = f.tensors_[k];
      order[k] = k;
      const std::string where = fmt::format("{}: offset {}: tensor '{}'", name_, info_offsets[k], t.name);
      if (t.offset % f.alignment_ != 0) {
        return data_loss(fmt::format("{}: data offset {} is not a multiple of the alignment {}", where, t.offset,
                                     f.alignment_));
      }
      uint64_t begin = 0;
      uint64_t end = 0;
      if (__builtin_add_overflow(f.data_offset_, t.offset, &begin) ||
          __builtin_add_overflow(begin, t.n_bytes, &end)) {
        return data_loss(fmt::format("{}: data offset {} + {} bytes overflows", where, t.offset, t.n_bytes));
      }
      if (end > size_) {
        return data_loss(
            fmt::format("{}: data [{}, {}) extends past end of file (size {})", where, begin, end, size_));
      }
      t.data = data_ + begin;
    }
    // Tensors must not share bytes: overlapping data means a corrupt file.
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return f.tensors_[a].offset < f.tensors_[b].offset; });
    const GgufTensorInfo* prev = nullptr;
    for (const size_t k : order) {
      const GgufTensorInfo& t = f.tensors_[k];
      if (t.n_bytes == 0) continue;
      if (prev != nullptr && t.offset < prev->offset + prev->n_bytes) {
        return data_loss(fmt::format("{}: tensor '{}': data [{}, {}) overlaps tensor '{}' [{}, {})", name_, t.name,
                                     t.offset, t.offset + t.n_bytes, prev->name, prev->offset,
                                     prev->offset + prev->n_bytes));
      }
      prev = &t;
    }
    return {};
  }

  const uint8_t* data_;
  size_t size_;
  std::string name_;
  ByteReader r_;
};

Result<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  GgufParser p(data, size, name);
  return p.parse();
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  TESSERA_ASSIGN_OR_RETURN(GgufFile f, parse(file->data(), file->size(), path));
  f.file_ = std::move(file);  // the mapping's address is stable, so tensor pointers stay valid
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Result<const GgufValue*> lookup(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (v == nullptr) return not_found(fmt::format("{}: metadata key '{}' not found", f.name(), key));
  return v;
}

Status mismatch(const GgufFile& f, std::string_view key, const GgufValue& v, std::string_view expected) {
  std::string got = gguf_type_name(v.type);
  if (v.type == GgufType::kArray) got = fmt::format("array of {}", gguf_type_name(v.array_type));
  return invalid_argument(fmt::format("{}: metadata key '{}' is {}, expected {}", f.name(), key, got, expected));
}

}  // namespace

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (!is_integer(v->type)) return mismatch(*this, key, *v, "an integer");
  const std::optional<int64_t> n = v->as_int();
  if (!n) return invalid_argument(fmt::format("{}: metadata key '{}' = {} does not fit int64", name_, key, v->u));
  return *n;
}

Result<double> GgufFile::get_float(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  const std::optional<double> x = v->as_float();
  if (!x) return mismatch(*this, key, *v, "a number");
  return *x;
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufType::kBool) return mismatch(*this, key, *v, "a bool");
  return v->i != 0 || v->u != 0;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufType::kString) return mismatch(*this, key, *v, "a string");
  return v->str;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString) {
    return mismatch(*this, key, *v, "an array of string");
  }
  std::vector<std::string> out;
  out.reserve(v->array.size());
  for (const GgufValue& e : v->array) out.push_back(e.str);
  return out;
}

Result<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufType::kArray || !(is_integer(v->array_type) || v->array_type == GgufType::kFloat32 ||
                                       v->array_type == GgufType::kFloat64)) {
    return mismatch(*this, key, *v, "an array of numbers");
  }
  std::vector<double> out;
  out.reserve(v->array.size());
  for (const GgufValue& e : v->array) out.push_back(e.as_float().value_or(0.0));
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  TESSERA_ASSIGN_OR_RETURN(const GgufValue* v, lookup(*this, key));
  if (v->type != GgufType::kArray || !is_integer(v->array_type)) {
    return mismatch(*this, key, *v, "an array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v->array.size());
  for (size_t k = 0; k < v->array.size(); ++k) {
    const std::optional<int64_t> n = v->array[k].as_int();
    if (!n) {
      return invalid_argument(
          fmt::format("{}: metadata key '{}' element {} = {} does not fit int64", name_, key, k, v->array[k].u));
    }
    out.push_back(*n);
  }
  return out;
}

}  // namespace tessera
