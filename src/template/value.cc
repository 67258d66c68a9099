#include "template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/error.h"

namespace tessera::tmpl {

const Value* Object::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Object::set(std::string key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

const Value* CallArgs::kwarg(std::string_view name) const {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value::Value(std::shared_ptr<Array> a) {
  int d = 0;
  bool ns = false;
  for (const Value& e : *a) {
    d = std::max(d, e.depth());
    ns = ns || e.holds_namespace_;
  }
  if (d + 1 > kMaxValueDepth) fail_limit("lists and dicts nested too deeply");
  depth_ = static_cast<uint16_t>(d + 1);
  holds_namespace_ = ns;
  v_ = std::move(a);
}

Value::Value(std::shared_ptr<Object> o) {
  int d = 0;
  bool ns = o->is_namespace;
  for (const auto& kv : o->items) {
    d = std::max(d, kv.second.depth());
    ns = ns || kv.second.holds_namespace_;
  }
  if (d + 1 > kMaxValueDepth) fail_limit("lists and dicts nested too deeply");
  depth_ = static_cast<uint16_t>(d + 1);
  if (o->is_namespace) o->namespace_depth = d + 1;
  holds_namespace_ = ns;
  v_ = std::move(o);
}

namespace {
void repr_into(const Value& v, TextBuilder* b);
}  // namespace

Value::Value(std::string s, CallerRanges caller) : v_(std::move(s)) {
  if (!caller.empty()) caller_ = std::make_shared<const CallerRanges>(std::move(caller));
}

Value Value::caller_text(std::string s) {
  const size_t n = s.size();
  if (n == 0) return Value(std::move(s));
  return Value(std::move(s), CallerRanges{{0, n}});
}

const CallerRanges& Value::caller_ranges() const {
  static const CallerRanges kNone;
  return caller_ ? *caller_ : kNone;
}

Value Value::substr(size_t pos, size_t n) const {
  const std::string& s = as_string();
  pos = std::min(pos, s.size());
  n = std::min(n, s.size() - pos);
  TextBuilder b;
  b.append_substr(*this, pos, n);
  return b.take();
}

Value Value::remap(std::string text) const {
  if (text.size() == as_string().size()) {
    Value out(std::move(text));
    out.caller_ = caller_;
    return out;
  }
  return derived_text(std::move(text), {this});
}

Value Value::text() const {
  switch (kind()) {
    case Kind::kString: return *this;
    case Kind::kUndefined: return Value("");
    case Kind::kArray:
    case Kind::kObject: {
      TextBuilder b;
      repr_into(*this, &b);
      return b.take();
    }
    default: return Value(repr());
  }
}

void TextBuilder::append(const Value& v) {
  if (v.is_string()) return append_substr(v, 0, v.as_string().size());
  const Value t = v.text();
  append_substr(t, 0, t.as_string().size());
}

void TextBuilder::append_substr(const Value& s, size_t pos, size_t n) {
  const size_t offset = text_.size();
  text_.append(s.as_string(), pos, n);
  for (const CallerRange& r : s.caller_ranges()) {
    const size_t b = std::max(r.begin, pos);
    const size_t e = std::min(r.end, pos + n);
    if (b < e) mark_caller(offset + b - pos, offset + e - pos);
  }
}

void TextBuilder::append(std::string_view bytes, bool caller) {
  const size_t offset = text_.size();
  text_.append(bytes);
  if (caller) mark_caller(offset, text_.size());
}

void TextBuilder::mark_caller(size_t begin, size_t end) {
  if (begin >= end) return;
  if (!caller_.empty() && caller_.back().end >= begin) {
    caller_.back().end = std::max(caller_.back().end, end);
    return;
  }
  caller_.push_back({begin, end});
}

Value TextBuilder::take() {
  Value out(std::move(text_), std::move(caller_));
  text_.clear();
  caller_.clear();
  return out;
}

namespace {

bool holds_caller_text(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString: return v.has_caller_text();
    case Value::Kind::kArray:
      for (const Value& e : v.as_array()) {
        if (holds_caller_text(e)) return true;
      }
      return false;
    case Value::Kind::kObject:
      if (v.as_object().caller_keys) return true;
      for (const auto& kv : v.as_object().items) {
        if (holds_caller_text(kv.second)) return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace

Value derived_text(std::string text, std::initializer_list<const Value*> inputs) {
  for (const Value* v : inputs) {
    if (v != nullptr && holds_caller_text(*v)) return Value::caller_text(std::move(text));
  }
  return Value(std::move(text));
}

int Value::depth() const {
  if (is_object() && as_object().is_namespace) return as_object().namespace_depth;
  return depth_;
}

double Value::to_double() const {
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  if (is_int()) return static_cast<double>(as_int());
  return as_float();
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_float() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kArray: return !as_array().empty();
    case Kind::kObject: return !as_object().items.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kArray: return "list";
    case Kind::kObject: return "dict";
    case Kind::kFunction: return "function";
  }
  return "?";
}

std::string format_float(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's repr layout: scientific when
  // the decimal exponent is < -4 or >= 16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mant = sci.substr(0, e_pos);
  const int exp10 = std::stoi(sci.substr(e_pos + 1));
  std::string sign;
  if (!mant.empty() && mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  if (exp10 < -4 || exp10 >= 16) {
    std::string m = digits.substr(0, 1);
    if (digits.size() > 1) m += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof(eb), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    return sign + m + eb;
  }
  std::string out;
  if (exp10 < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return sign + out;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == q) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

}  // namespace

std::string Value::to_str() const {
  switch (kind()) {
    case Kind::kUndefined: return "";
    case Kind::kString: return as_string();
    default: return repr();
  }
}

std::string Value::repr() const {
  TextBuilder b;
  repr_into(*this, &b);
  return std::move(b.raw());
}

namespace {

void repr_into(const Value& v, TextBuilder* b) {
  std::string* out = &b->raw();
  if (out->size() > kMaxOutputBytes) fail_limit("rendered value too large");
  switch (v.kind()) {
    case Value::Kind::kUndefined: return;
    case Value::Kind::kNone: *out += "None"; return;
    case Value::Kind::kBool: *out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: *out += format_float(v.as_float()); return;
    case Value::Kind::kString: {
      const size_t start = out->size();
      *out += repr_string(v.as_string());
      if (v.has_caller_text()) b->mark_caller(start, out->size());
      return;
    }
    case Value::Kind::kArray: {
      *out += "[";
      bool first = true;
      for (const Value& e : v.as_array()) {
        if (!first) *out += ", ";
        first = false;
        repr_into(e, b);
      }
      *out += "]";
      return;
    }
    case Value::Kind::kObject: {
      *out += "{";
      bool first = true;
      for (const auto& [k, e] : v.as_object().items) {
        if (!first) *out += ", ";
        first = false;
        const size_t start = out->size();
        *out += repr_string(k);
        if (v.as_object().caller_keys) b->mark_caller(start, out->size());
        *out += ": ";
        repr_into(e, b);
      }
      *out += "}";
      return;
    }
    case Value::Kind::kFunction: *out += "<function " + v.as_function()->name + ">"; return;
  }
}

}  // namespace

namespace {

bool equal_impl(const Value& a, const Value& b, int64_t* budget) {
  if (--*budget < 0) fail_limit("comparison too expensive");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    const int64_t x = a.is_bool() ? (a.as_bool() ? 1 : 0) : a.as_int();
    const int64_t y = b.is_bool() ? (b.as_bool() ? 1 : 0) : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kArray: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equal_impl(x[i], y[i], budget)) return false;
      }
      return true;
    }
    case Value::Kind::kObject: {
      const Object& x = a.as_object();
      const Object& y = b.as_object();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (other == nullptr || !equal_impl(v, *other, budget)) return false;
      }
      return true;
    }
    case Value::Kind::kFunction: return a.as_function() == b.as_function();
    default: return false;
  }
}

}  // namespace

bool values_equal(const Value& a, const Value& b) {
  int64_t budget = kMaxSteps;
  return equal_impl(a, b, &budget);
}

namespace {

template <typename Json>
Value convert(const Json& j, int depth, bool caller) {
  if (depth > kMaxValueDepth) fail_limit("input JSON nested too deeply");
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value(None{});
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: {
      const std::string& str = j.template get_ref<const std::string&>();
      return caller ? Value::caller_text(str) : Value(str);
    }
    case nlohmann::json::value_t::array: {
      Array a;
      a.reserve(j.size());
      for (const auto& e : j) a.push_back(convert(e, depth + 1, caller));
      return Value(std::move(a));
    }
    case nlohmann::json::value_t::object: {
      Object o;
      o.caller_keys = caller;
      o.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        o.items.emplace_back(it.key(), convert(it.value(), depth + 1, caller));
      }
      return Value(std::move(o));
    }
    default: return Value(None{});  // binary / discarded: not produced by JSON text
  }
}

void append_json_string(const std::string& s, bool ensure_ascii, std::string* out) {
  *out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': *out += "\\\""; continue;
      case '\\': *out += "\\\\"; continue;
      case '\n': *out += "\\n"; continue;
      case '\r': *out += "\\r"; continue;
      case '\t': *out += "\\t"; continue;
      case '\b': *out += "\\b"; continue;
      case '\f': *out += "\\f"; continue;
      default: break;
    }
    char buf[16];
    if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      *out += buf;
    } else if (c < 0x80 || !ensure_ascii) {
      *out += static_cast<char>(c);
    } else {
      // Decode one UTF-8 sequence; invalid bytes are escaped as themselves.
      uint32_t cp = c;
      size_t len = 1;
      if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; len = 2; }
      else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; len = 3; }
      else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; len = 4; }
      bool ok = len > 1 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k) {
        const unsigned char cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80) ok = false;
        cp = (cp << 6) | (cc & 0x3F);
      }
      if (!ok) cp = c, len = 1;
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
      i += len - 1;
    }
  }
  *out += '"';
}

bool dump(const Value& v, const JsonOptions& o, int level, TextBuilder* b, std::string* error) {
  std::string* out = &b->raw();
  if (out->size() > kMaxOutputBytes) {
    *error = "tojson output too large";
    return false;
  }
  const bool pretty = o.indent >= 0 || !o.indent_str.empty();
  const std::string item_sep = o.custom_item_separator ? o.item_separator : (pretty ? "," : ", ");
  auto newline = [&](int lvl) {
    *out += '\n';
    for (int i = 0; i < lvl; ++i) {
      if (!o.indent_str.empty()) {
        *out += o.indent_str;
      } else {
        out->append(static_cast<size_t>(o.indent), ' ');
      }
    }
  };
  switch (v.kind()) {
    case Value::Kind::kNone: *out += "null"; return true;
    case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return true;
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return true;
    case Value::Kind::kFloat: {
      const double f = v.as_float();
      if (std::isnan(f)) *out += "NaN";
      else if (std::isinf(f)) *out += f > 0 ? "Infinity" : "-Infinity";
      else *out += format_float(f);
      return true;
    }
    case Value::Kind::kString: {
      const size_t start = out->size();
      append_json_string(v.as_string(), o.ensure_ascii, out);
      if (v.has_caller_text()) b->mark_caller(start, out->size());
      return true;
    }
    case Value::Kind::kArray: {
      const Array& a = v.as_array();
      if (a.empty()) {
        *out += "[]";
        return true;
      }
      *out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i > 0) *out += item_sep;
        if (pretty) newline(level + 1);
        if (!dump(a[i], o, level + 1, b, error)) return false;
      }
      if (pretty) newline(level);
      *out += ']';
      return true;
    }
    case Value::Kind::kObject: {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.as_object().items) items.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](auto* x, auto* y) { return x->first < y->first; });
      }
      if (items.empty()) {
        *out += "{}";
        return true;
      }
      *out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += item_sep;
        if (pretty) newline(level + 1);
        const size_t start = out->size();
        append_json_string(items[i]->first, o.ensure_ascii, out);
        if (v.as_object().caller_keys) b->mark_caller(start, out->size());
        *out += o.key_separator;
        if (!dump(items[i]->second, o, level + 1, b, error)) return false;
      }
      if (pretty) newline(level);
      *out += '}';
      return true;
    }
    case Value::Kind::kUndefined:
      *error = "Object of type Undefined is not JSON serializable";
      return false;
    case Value::Kind::kFunction:
      *error = "Object of type function is not JSON serializable";
      return false;
  }
  return false;
}

}  // namespace

Value from_json(const nlohmann::json& j, bool caller) { return convert(j, 0, caller); }
Value from_json(const nlohmann::ordered_json& j, bool caller) { return convert(j, 0, caller); }

bool dump_json(const Value& value, const JsonOptions& options, TextBuilder* out, std::string* error) {
  return dump(value, options, 0, out, error);
}

}  // namespace tessera::tmpl
