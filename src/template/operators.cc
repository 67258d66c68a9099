#include "template/operators.h"

#include <cmath>
#include <limits>
#include <optional>

#include "template/error.h"
#include "template/text_util.h"

namespace tessera::tmpl {

void require_defined(const Value& v) {
  if (v.is_undefined()) fail("'" + (v.undefined_hint().empty() ? "value" : v.undefined_hint()) + "' is undefined");
}

namespace {

int64_t int_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value repeat(const Value& seq, int64_t n) {
  if (n <= 0) return seq.is_string() ? Value("") : Value(Array{});
  if (seq.is_string()) {
    const size_t len = seq.as_string().size();
    if (len != 0 && static_cast<uint64_t>(n) > kMaxOutputBytes / len) fail_limit("string repetition too large");
    TextBuilder out;
    for (int64_t i = 0; i < n; ++i) out.append(seq);
    return out.take();
  }
  const size_t len = seq.as_array().size();
  if (len != 0 && static_cast<uint64_t>(n) > kMaxItems / len) fail_limit("list repetition too large");
  Array out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_array().begin(), seq.as_array().end());
  return Value(std::move(out));
}

int compare_values(const Value& a, const Value& b, const std::string& op) {
  if (a.is_number() && b.is_number()) {
    if (is_integral(a) && is_integral(b)) return int_of(a) < int_of(b) ? -1 : (int_of(a) > int_of(b) ? 1 : 0);
    const double x = a.to_double();
    const double y = b.to_double();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_array() && b.is_array()) {
    const Array& x = a.as_array();
    const Array& y = b.as_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return compare_values(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  require_defined(a);
  require_defined(b);
  fail("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    TextBuilder s;
    s.append(a);
    s.append(b);
    if (s.size() > kMaxOutputBytes) fail_limit("string too large");
    return s.take();
  }
  require_defined(a);
  require_defined(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > kMaxOutputBytes) fail_limit("string too large");
      TextBuilder s;
      s.append(a);
      s.append(b);
      return s.take();
    }
    if (a.is_array() && b.is_array()) {
      if (a.as_array().size() + b.as_array().size() > kMaxItems) fail_limit("list too large");
      Array out = a.as_array();
      out.insert(out.end(), b.as_array().begin(), b.as_array().end());
      return Value(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && is_integral(b)) return repeat(a, int_of(b));
    if ((b.is_string() || b.is_array()) && is_integral(a)) return repeat(b, int_of(a));
  }
  if (!a.is_number() || !b.is_number()) type_error(op, a, b);
  if (is_integral(a) && is_integral(b)) {
    const int64_t x = int_of(a);
    const int64_t y = int_of(b);
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) fail("integer overflow");
      return Value(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) fail("integer overflow");
      return Value(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) fail("integer overflow");
      return Value(r);
    }
    if (op == "//" || op == "%") {
      if (y == 0) fail("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) fail("integer overflow");
      int64_t q = x / y;
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        q -= 1;
        m += y;
      }
      return Value(op == "//" ? q : m);
    }
    if (op == "**" && y >= 0) {
      int64_t acc = 1;
      for (int64_t i = 0; i < y; ++i) {
        if (__builtin_mul_overflow(acc, x, &acc)) fail("integer overflow");
        if (acc == 0 || acc == 1) break;
      }
      if (acc == 1 && x == -1 && y % 2 == 1) acc = -1;
      return Value(acc);
    }
  }
  const double x = a.to_double();
  const double y = b.to_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "**") return Value(std::pow(x, y));
  if (op == "/" || op == "//" || op == "%") {
    if (y == 0.0) fail("division by zero");
    if (op == "/") return Value(x / y);
    const double m = std::fmod(x, y);
    const double mod = (m != 0.0 && ((m < 0) != (y < 0))) ? m + y : m;
    if (op == "%") return Value(mod);
    return Value(std::floor(x / y));
  }
  type_error(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string()) fail(std::string("'in <string>' requires string as left operand, not ") + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kArray:
      for (const Value& v : container.as_array()) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::kObject:
      return item.is_string() && container.as_object().find(item.as_string()) != nullptr;
    default:
      fail(std::string("argument of type '") + container.type_name() + "' is not iterable");
  }
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  const int c = compare_values(a, b, op);
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  const std::vector<size_t> starts = utf8_char_starts(s);
  out.reserve(starts.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : s.size();
    out.push_back(s.substr(starts[k], end - starts[k]));
  }
  return out;
}

Array string_chars(const Value& s) {
  const std::vector<size_t> starts = utf8_char_starts(s.as_string());
  Array out;
  out.reserve(starts.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : s.as_string().size();
    out.push_back(s.substr(starts[k], end - starts[k]));
  }
  return out;
}

std::vector<size_t> utf8_char_starts(const std::string& s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    }
    out.push_back(i);
    i += len;
  }
  return out;
}

Value key_value(const Object& o, const std::string& key) {
  return o.caller_keys ? Value::caller_text(key) : Value(key);
}

Value replace_text(const Value& s, const std::string& from, const Value& to, int64_t count) {
  const std::string& text = s.as_string();
  if (from.empty() || (!s.has_caller_text() && !to.has_caller_text())) {
    return derived_text(python_replace(text, from, to.as_string(), count), {&s, &to});
  }
  TextBuilder out;
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string::npos) break;
    out.append_substr(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
    ++n;
    if (out.size() > kMaxOutputBytes) fail_limit("replace result too large");
  }
  out.append_substr(s, pos, text.size() - pos);
  return out.take();
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: {
      int64_t n = 0;
      for (unsigned char c : v.as_string()) n += (c & 0xC0) != 0x80;
      return n;
    }
    case Value::Kind::kArray: return static_cast<int64_t>(v.as_array().size());
    case Value::Kind::kObject: return static_cast<int64_t>(v.as_object().items.size());
    default: fail(std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

Array iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kArray: return v.as_array();
    case Value::Kind::kObject: {
      Array keys;
      for (const auto& kv : v.as_object().items) keys.push_back(key_value(v.as_object(), kv.first));
      return keys;
    }
    case Value::Kind::kString: return string_chars(v);
    default: fail(std::string("'") + v.type_name() + "' object is not iterable");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_object()) {
    const Value* v = obj.as_object().find(name);
    if (v != nullptr) return *v;
  }
  return Value(Undefined{name});
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_object()) {
    if (key.is_string()) return get_attr(obj, key.as_string());
    return Value(Undefined{key.to_str()});
  }
  if ((obj.is_array() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = int_of(key);
    if (obj.is_array()) {
      const int64_t n = static_cast<int64_t>(obj.as_array().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value(Undefined{"list index out of range"});
      return obj.as_array()[static_cast<size_t>(i)];
    }
    const Array chars = string_chars(obj);
    const int64_t n = static_cast<int64_t>(chars.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value(Undefined{"string index out of range"});
    return chars[static_cast<size_t>(i)];
  }
  if (obj.is_undefined()) return Value(Undefined{obj.undefined_hint()});
  if (obj.is_array() || obj.is_string()) {
    fail(std::string(obj.type_name()) + " indices must be integers, not " + key.type_name());
  }
  return Value(Undefined{key.to_str()});
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  auto bound = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail(std::string("slice ") + what + " must be an integer");
    return int_of(v);
  };
  const std::optional<int64_t> b = bound(start, "start");
  const std::optional<int64_t> e = bound(stop, "stop");
  const int64_t s = bound(step, "step").value_or(1);
  if (s == 0) fail("slice step cannot be zero");
  if (obj.is_undefined()) return obj;
  Array chars;
  const Array* items = nullptr;
  int64_t n = 0;
  if (obj.is_string()) {
    chars = string_chars(obj);
    n = static_cast<int64_t>(chars.size());
  } else if (obj.is_array()) {
    items = &obj.as_array();
    n = static_cast<int64_t>(items->size());
  } else {
    fail(std::string("'") + obj.type_name() + "' object is not subscriptable");
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t def) {
    if (!v) return def;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = s < 0 ? -1 : 0;
    } else if (x >= n) {
      x = s < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = adjust(b, s < 0 ? n - 1 : 0);
  const int64_t hi = adjust(e, s < 0 ? -1 : n);
  TextBuilder str_out;
  Array arr_out;
  for (int64_t i = lo; s > 0 ? i < hi : i > hi; i += s) {
    if (items != nullptr) {
      arr_out.push_back((*items)[static_cast<size_t>(i)]);
    } else {
      str_out.append(chars[static_cast<size_t>(i)]);
    }
  }
  if (items != nullptr) return Value(std::move(arr_out));
  return str_out.take();
}

}  // namespace tessera::tmpl
