#include "formats/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

namespace tessera {

namespace {

using Json = nlohmann::json;

// Quoted, escaped and shortened for error messages: names come from untrusted
// input and may be long or hold control bytes.
std::string quote(std::string_view s) {
  constexpr size_t kMaxShown = 120;
  std::string out = "'";
  for (size_t k = 0; k < s.size() && k < kMaxShown; ++k) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxShown) out += "...";
  out += '\'';
  return out;
}

// Every dtype of the safetensors spec with its size in bits; only F32, F16
// and BF16 map to a tessera DType.
struct DtypeInfo {
  std::string_view name;
  uint32_t bits;
  std::optional<DType> dtype;
};

constexpr DtypeInfo kDtypes[] = {
    {"F32", 32, DType::kF32},  {"F16", 16, DType::kF16},     {"BF16", 16, DType::kBF16},   {"F64", 64, std::nullopt},
    {"I64", 64, std::nullopt}, {"U64", 64, std::nullopt},    {"I32", 32, std::nullopt},    {"U32", 32, std::nullopt},
    {"I16", 16, std::nullopt}, {"U16", 16, std::nullopt},    {"I8", 8, std::nullopt},      {"U8", 8, std::nullopt},
    {"BOOL", 8, std::nullopt}, {"F8_E4M3", 8, std::nullopt}, {"F8_E5M2", 8, std::nullopt}, {"F8_E8M0", 8, std::nullopt},
    {"C64", 64, std::nullopt}, {"F6_E2M3", 6, std::nullopt}, {"F6_E3M2", 6, std::nullopt}, {"F4", 4, std::nullopt},
};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// A tensor entry as read from the header, before its values are checked.
struct RawEntry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint64_t> offsets;
  bool has_dtype = false;
  bool has_shape = false;
  bool has_offsets = false;
};

// JSON value kinds, for "got <kind>" in messages.
enum class Kind { kNull, kBool, kNegative, kUnsigned, kFloat, kString, kObject, kArray };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kNegative:
      return "a negative integer";
    case Kind::kUnsigned:
      return "an integer";
    case Kind::kFloat:
      return "a non-integer number";
    case Kind::kString:
      return "a string";
    case Kind::kObject:
      return "an object";
    case Kind::kArray:
      return "an array";
  }
  return "a value";
}

// SAX handler for the header: checks the structure while nlohmann's parser
// streams the JSON and keeps only the tensor entries and the metadata, so no
// DOM of an arbitrary (up to 100 MB) document is built. Any handler returning
// false stops the parse; `status` then says why.
class HeaderSax {
 public:
  explicit HeaderSax(const std::string& name) : name_(name) {}

  Status status;
  std::vector<RawEntry> entries;
  std::map<std::string, std::string> metadata;

  bool null() { return value(Kind::kNull); }
  bool boolean(bool /*v*/) { return value(Kind::kBool); }
  bool number_integer(Json::number_integer_t /*v*/) { return value(Kind::kNegative); }  // only negatives arrive here
  bool number_unsigned(Json::number_unsigned_t v) { return value(Kind::kUnsigned, v); }
  bool number_float(Json::number_float_t /*v*/, const Json::string_t& /*s*/) { return value(Kind::kFloat); }
  bool string(Json::string_t& s) { return value(Kind::kString, 0, &s); }
  bool binary(Json::binary_t& /*b*/) { return value(Kind::kNull); }  // not produced by the JSON lexer

  bool start_object(size_t /*n*/) { return value(Kind::kObject); }
  bool start_array(size_t /*n*/) { return value(Kind::kArray); }

  bool end_object() {
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    const Ctx c = stack_.back();
    stack_.pop_back();
    if (c != Ctx::kEntry) return true;
    const char* missing = !cur_.has_dtype     ? "dtype"
                          : !cur_.has_shape   ? "shape"
                          : !cur_.has_offsets ? "data_offsets"
                                              : nullptr;
    if (missing != nullptr) return fail("tensor " + quote(cur_.name) + ": missing \"" + missing + "\"");
    entries.push_back(std::move(cur_));
    return true;
  }

  bool end_array() {
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    const Ctx c = stack_.back();
    stack_.pop_back();
    if (c == Ctx::kOffsets && cur_.offsets.size() != 2) {
      return fail("tensor " + quote(cur_.name) + ": data_offsets must be [begin, end], got " +
                  std::to_string(cur_.offsets.size()) + " integers");
    }
    return true;
  }

  bool key(Json::string_t& k) {
    if (skip_ > 0) return true;
    switch (stack_.back()) {
      case Ctx::kRoot:
        if (!names_.insert(k).second) {
          return fail(k == kMetadataKey ? std::string("duplicate \"__metadata__\"")
                                        : "duplicate tensor name " + quote(k));
        }
        break;
      case Ctx::kEntry:
        if (!entry_keys_.insert(k).second) return fail("tensor " + quote(cur_.name) + ": duplicate key " + quote(k));
        break;
      case Ctx::kMetadata:
        if (metadata.count(k) != 0) return fail("__metadata__: duplicate key " + quote(k));
        break;
      case Ctx::kShape:
      case Ctx::kOffsets:
        break;  // arrays have no keys
    }
    key_ = k;
    return true;
  }

  bool parse_error(size_t position, const std::string& /*last_token*/, const Json::exception& ex) {
    std::string what = ex.what();
    if (what.size() > 300) what = what.substr(0, 300) + "...";
    status = data_loss(fmt::format("{}: offset {}: header is not valid JSON: {}", name_, 8 + position, what));
    return false;
  }

 private:
  static constexpr std::string_view kMetadataKey = "__metadata__";
  enum class Ctx { kRoot, kMetadata, kEntry, kShape, kOffsets };

  bool fail(const std::string& what) {
    status = data_loss(name_ + ": header: " + what);
    return false;
  }

  // Any value, including the start of an object or array.
  bool value(Kind kind, uint64_t u = 0, std::string* s = nullptr) {
    if (skip_ > 0) {
      if (kind == Kind::kObject || kind == Kind::kArray) ++skip_;
      return true;
    }
    if (stack_.empty()) {
      if (kind != Kind::kObject) return fail(std::string("not a JSON object (got ") + kind_name(kind) + ")");
      stack_.push_back(Ctx::kRoot);
      return true;
    }
    switch (stack_.back()) {
      case Ctx::kRoot:
        if (key_ == kMetadataKey) {
          if (kind == Kind::kObject) stack_.push_back(Ctx::kMetadata);
          if (kind == Kind::kObject || kind == Kind::kNull) return true;
          return fail(std::string("__metadata__ must be an object, got ") + kind_name(kind));
        }
        if (kind != Kind::kObject)
          return fail("tensor " + quote(key_) + ": entry must be an object, got " + kind_name(kind));
        cur_ = RawEntry{};
        cur_.name = key_;
        entry_keys_.clear();
        stack_.push_back(Ctx::kEntry);
        return true;
      case Ctx::kMetadata:
        if (kind != Kind::kString)
          return fail("__metadata__ " + quote(key_) + ": value must be a string, got " + kind_name(kind));
        metadata.emplace(key_, std::move(*s));
        return true;
      case Ctx::kEntry:
        return entry_field(kind, s);
      case Ctx::kShape:
        if (kind == Kind::kNegative) return fail("tensor " + quote(cur_.name) + ": negative dimension in shape");
        if (kind != Kind::kUnsigned) {
          return fail("tensor " + quote(cur_.name) + ": shape must be an array of integers, has " + kind_name(kind));
        }
        if (cur_.shape.size() >= SafetensorsFile::kMaxDims) {
          return fail("tensor " + quote(cur_.name) + ": more than " + std::to_string(SafetensorsFile::kMaxDims) +
                      " dimensions");
        }
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return fail("tensor " + quote(cur_.name) + ": dimension " + std::to_string(u) + " too large");
        }
        cur_.shape.push_back(u);
        return true;
      case Ctx::kOffsets:
        if (kind == Kind::kNegative) return fail("tensor " + quote(cur_.name) + ": negative data offset");
        if (kind != Kind::kUnsigned) {
          return fail("tensor " + quote(cur_.name) + ": data_offsets must be two integers, has " + kind_name(kind));
        }
        if (cur_.offsets.size() >= 2) {
          return fail("tensor " + quote(cur_.name) + ": data_offsets must be [begin, end], has more than 2 integers");
        }
        cur_.offsets.push_back(u);
        return true;
    }
    return true;
  }

  // A value of field `key_` inside a tensor entry.
  bool entry_field(Kind kind, std::string* s) {
    const std::string where = "tensor " + quote(cur_.name) + ": ";
    if (key_ == "dtype") {
      if (kind != Kind::kString) return fail(where + "\"dtype\" must be a string, got " + kind_name(kind));
      cur_.dtype = std::move(*s);
      cur_.has_dtype = true;
    } else if (key_ == "shape" || key_ == "data_offsets") {
      if (kind != Kind::kArray) return fail(where + "\"" + key_ + "\" must be an array, got " + kind_name(kind));
      const bool shape = key_ == "shape";
      (shape ? cur_.has_shape : cur_.has_offsets) = true;
      stack_.push_back(shape ? Ctx::kShape : Ctx::kOffsets);
    } else if (kind == Kind::kObject || kind == Kind::kArray) {
      skip_ = 1;  // an unknown field: skipped whole, as the reference implementation ignores it
    }
    return true;
  }

  const std::string& name_;
  std::vector<Ctx> stack_;
  int64_t skip_ = 0;                  // > 0: depth inside a skipped unknown field's value
  std::string key_;                   // the last key of the innermost object being read
  std::set<std::string> names_;       // root keys seen
  std::set<std::string> entry_keys_;  // keys of the entry being read
  RawEntry cur_;
};

}  // namespace

class SafetensorsParser {
 public:
  static Result<SafetensorsFile> parse(const uint8_t* data, size_t size, const std::string& name) {
    if (size < 8) {
      return data_loss(
          fmt::format("{}: offset 0: truncated: {} bytes, shorter than the 8-byte header size", name, size));
    }
    uint64_t n = 0;
    for (int k = 0; k < 8; ++k) n |= static_cast<uint64_t>(data[k]) << (8 * k);
    if (n > SafetensorsFile::kMaxHeaderBytes) {
      return data_loss(fmt::format("{}: offset 0: header size {} exceeds the limit of {} bytes", name, n,
                                   SafetensorsFile::kMaxHeaderBytes));
    }
    if (n > size - 8) {
      return data_loss(fmt::format("{}: offset 0: truncated: header size {} exceeds the {} bytes after the size field",
                                   name, n, size - 8));
    }

    HeaderSax sax(name);
    const char* json_begin = reinterpret_cast<const char*>(data + 8);
    bool parsed = false;
    try {
      parsed = Json::sax_parse(json_begin, json_begin + n, &sax);
    } catch (const std::exception& e) {  // allocation failure; the parser itself reports through the handler
      return resource_exhausted(name + ": header: " + e.what());
    }
    if (!parsed) {
      if (sax.status.ok()) return data_loss(name + ": header: invalid JSON");
      return sax.status;
    }

    SafetensorsFile f;
    f.name_ = name;
    f.size_ = size;
    f.header_size_ = n;
    f.metadata_ = std::move(sax.metadata);
    const uint8_t* buffer = data + 8 + n;
    const uint64_t buffer_size = size - 8 - n;
    f.tensors_.reserve(sax.entries.size());
    std::string unsupported;  // first tensor with a dtype tessera cannot use, reported after all checks
    for (RawEntry& e : sax.entries) {
      const std::string where = name + ": tensor " + quote(e.name) + ": ";
      const DtypeInfo* info = find_dtype(e.dtype);
      if (info == nullptr) return data_loss(where + "unknown dtype " + quote(e.dtype));
      if (!info->dtype && unsupported.empty()) {
        unsupported = where + "dtype " + std::string(info->name) + " is not supported (only F32, F16, BF16)";
      }
      int64_t elements = 1;
      for (const uint64_t d : e.shape) {  // each d <= INT64_MAX (checked while parsing)
        if (__builtin_mul_overflow(elements, static_cast<int64_t>(d), &elements)) {
          return data_loss(where + "element count overflows");
        }
      }
      uint64_t bits = 0;
      if (__builtin_mul_overflow(static_cast<uint64_t>(elements), uint64_t{info->bits}, &bits)) {
        return data_loss(where + "byte count overflows");
      }
      if (bits % 8 != 0) return data_loss(where + "size is not a whole number of bytes");
      const uint64_t begin = e.offsets[0];
      const uint64_t end = e.offsets[1];
      if (begin > end) return data_loss(fmt::format("{}data_offsets [{}, {}]: begin > end", where, begin, end));
      if (end > buffer_size) {
        return data_loss(fmt::format("{}data_offsets [{}, {}]: end is past the data buffer ({} bytes)", where, begin,
                                     end, buffer_size));
      }
      if (end - begin != bits / 8) {
        return data_loss(fmt::format("{}data_offsets [{}, {}] hold {} bytes, but {} elements of {} need {}", where,
                                     begin, end, end - begin, elements, info->name, bits / 8));
      }
      SafetensorsTensor t;
      t.name = std::move(e.name);
      t.dtype = info->dtype.value_or(DType::kF32);
      t.shape.assign(e.shape.begin(), e.shape.end());
      t.data = buffer + begin;
      t.n_bytes = end - begin;
      t.n_elements = elements;
      f.index_.emplace(t.name, f.tensors_.size());  // names are unique (checked while parsing)
      f.tensors_.push_back(std::move(t));
    }

    // Overlaps: in order of begin, each tensor must start at or after the
    // furthest end so far. Empty tensors occupy no bytes and never overlap.
    std::vector<size_t> order;
    for (size_t k = 0; k < f.tensors_.size(); ++k) {
      if (f.tensors_[k].n_bytes > 0) order.push_back(k);
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return f.tensors_[a].data < f.tensors_[b].data; });
    for (size_t k = 1; k < order.size(); ++k) {
      const SafetensorsTensor& prev = f.tensors_[order[k - 1]];
      const SafetensorsTensor& cur = f.tensors_[order[k]];
      if (cur.data < prev.data + prev.n_bytes) {
        return data_loss(name + ": tensors " + quote(prev.name) + " and " + quote(cur.name) + " overlap");
      }
    }
    if (!unsupported.empty()) return unimplemented(unsupported);
    return f;
  }
};

Result<SafetensorsFile> SafetensorsFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  return SafetensorsParser::parse(data, size, name);
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  TESSERA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  TESSERA_ASSIGN_OR_RETURN(SafetensorsFile f, parse(file->data(), file->size(), path));
  f.file_ = std::move(file);  // the mapping's address is stable, so tensor pointers stay valid
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// Parses the index JSON, rejecting duplicate keys in any object (the DOM
// parser would keep the last one silently).
Result<Json> parse_index(const uint8_t* data, size_t size, const std::string& path) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  const Json::parser_callback_t cb = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      keys.pop_back();
    } else if (event == Json::parse_event_t::key && parsed.is_string() && !keys.empty()) {
      if (!keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  try {
    const char* begin = reinterpret_cast<const char*>(data);
    Json j = Json::parse(begin, begin + size, cb);
    if (!duplicate.empty()) return data_loss(path + ": duplicate key " + quote(duplicate));
    return j;
  } catch (const Json::exception& e) {
    std::string what = e.what();
    if (what.size() > 300) what = what.substr(0, 300) + "...";
    return data_loss(path + ": not valid JSON: " + what);
  } catch (const std::exception& e) {
    return resource_exhausted(path + ": " + e.what());
  }
}

bool safe_relative_path(const std::string& file) {
  if (file.empty() || file.front() == '/') return false;
  for (const auto& part : std::filesystem::path(file)) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open_dir(const std::string& dir) {
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  std::error_code ec;
  SafetensorsCheckpoint ckpt;
  if (!std::filesystem::exists(index_path, ec)) {
    if (!std::filesystem::exists(single_path, ec)) {
      return not_found(dir + ": neither model.safetensors nor model.safetensors.index.json found");
    }
    TESSERA_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(single_path));
    for (size_t k = 0; k < f.tensors().size(); ++k) ckpt.index_.emplace(f.tensors()[k].name, Location{0, k});
    ckpt.files_.push_back(std::move(f));
    return ckpt;
  }

  TESSERA_ASSIGN_OR_RETURN(MappedFile index_file, MappedFile::open(index_path));
  if (index_file.size() > kMaxIndexBytes) {
    return data_loss(
        fmt::format("{}: {} bytes, larger than the {}-byte limit", index_path, index_file.size(), kMaxIndexBytes));
  }
  TESSERA_ASSIGN_OR_RETURN(const Json index, parse_index(index_file.data(), index_file.size(), index_path));
  if (!index.is_object()) return data_loss(index_path + ": not a JSON object");
  const auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object()) return data_loss(index_path + ": missing object \"weight_map\"");
  if (wm->empty()) return data_loss(index_path + ": \"weight_map\" is empty");

  // Shard file -> tensors the index places in it; std::map keeps shards sorted.
  std::map<std::string, size_t> shard_ids;
  for (const auto& [tensor, file] : wm->items()) {
    if (!file.is_string()) return data_loss(index_path + ": weight_map " + quote(tensor) + ": file must be a string");
    const std::string& f = file.get_ref<const std::string&>();
    if (!safe_relative_path(f)) {
      return data_loss(index_path + ": weight_map " + quote(tensor) + ": shard " + quote(f) +
                       " must be a relative path inside the directory");
    }
    shard_ids.emplace(f, 0);
  }
  std::vector<std::string> shard_names;
  for (auto& [file, id] : shard_ids) {
    id = shard_names.size();
    shard_names.push_back(file);
    Result<SafetensorsFile> shard = SafetensorsFile::open(dir + "/" + file);
    if (!shard.ok()) {
      return Status(shard.status().code(), index_path + ": shard " + quote(file) + ": " + shard.status().message());
    }
    ckpt.files_.push_back(std::move(shard).value());
  }
  for (size_t s = 0; s < ckpt.files_.size(); ++s) {
    const std::vector<SafetensorsTensor>& ts = ckpt.files_[s].tensors();
    for (size_t k = 0; k < ts.size(); ++k) {
      const auto [it, inserted] = ckpt.index_.emplace(ts[k].name, Location{s, k});
      if (!inserted) {
        return data_loss(dir + ": tensor " + quote(ts[k].name) + " is in two shards, " +
                         quote(shard_names[it->second.file]) + " and " + quote(shard_names[s]));
      }
    }
  }
  for (const auto& [tensor, file] : wm->items()) {
    const size_t want = shard_ids.at(file.get_ref<const std::string&>());
    const auto it = ckpt.index_.find(tensor);
    if (it == ckpt.index_.end()) {
      return data_loss(index_path + ": tensor " + quote(tensor) + " is listed for shard " + quote(shard_names[want]) +
                       " but absent from it");
    }
    if (it->second.file != want) {
      return data_loss(index_path + ": tensor " + quote(tensor) + " is listed for shard " + quote(shard_names[want]) +
                       " but is in " + quote(shard_names[it->second.file]));
    }
  }
  return ckpt;
}

const SafetensorsTensor* SafetensorsCheckpoint::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &files_[it->second.file].tensors()[it->second.tensor];
}

std::vector<const SafetensorsTensor*> SafetensorsCheckpoint::tensors() const {
  std::vector<const SafetensorsTensor*> out;
  out.reserve(index_.size());
  for (const auto& [name, loc] : index_) out.push_back(&files_[loc.file].tensors()[loc.tensor]);
  return out;
}

}  // namespace tessera
