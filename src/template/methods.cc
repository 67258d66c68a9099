// Builtin methods, tests and globals (see builtins.h).
#include <ctime>

#include "template/builtins.h"
#include "template/error.h"
#include "template/operators.h"
#include "template/text_util.h"

namespace tessera::tmpl {
namespace {

const Value* arg(const CallArgs& a, size_t index, std::string_view name) {
  if (index < a.args.size()) return &a.args[index];
  return a.kwarg(name);
}

const std::string* opt_string(const Value* v, const char* what) {
  if (v == nullptr || v->is_none()) return nullptr;
  if (!v->is_string()) fail(std::string(what) + " must be a string or None");
  return &v->as_string();
}

int64_t opt_int(const Value* v, int64_t def) {
  if (v == nullptr || v->is_none()) return def;
  if (!v->is_int()) fail("expected an integer argument");
  return v->as_int();
}

// Parts of `source` (split, splitlines): caller text if `source` holds any.
Value strings_to_array(const std::vector<std::string>& parts, const Value& source) {
  Array out;
  out.reserve(parts.size());
  for (const std::string& p : parts) out.push_back(derived_text(p, {&source}));
  return Value(std::move(out));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& x) {
    if (!x.is_string()) fail("startswith/endswith need a string or a tuple of strings");
    const std::string& t = x.as_string();
    if (t.size() > s.size()) return false;
    return prefix ? s.compare(0, t.size(), t) == 0 : s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  if (affix.is_array()) {
    for (const Value& x : affix.as_array()) {
      if (one(x)) return true;
    }
    return false;
  }
  return one(affix);
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

// "{} and {0}" positional fields only.
Value python_format(const Value& fmt_value, const CallArgs& a) {
  const std::string& fmt = fmt_value.as_string();
  TextBuilder out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.append_substr(fmt_value, i, 1);
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out.append_substr(fmt_value, i, 1);
      ++i;
    } else if (c == '{') {
      const size_t close = fmt.find('}', i);
      if (close == std::string::npos) fail("format: single '{' encountered");
      const std::string field = fmt.substr(i + 1, close - i - 1);
      const Value* v = nullptr;
      if (field.empty()) {
        v = auto_index < a.args.size() ? &a.args[auto_index++] : nullptr;
      } else if (field.find_first_not_of("0123456789") == std::string::npos && field.size() < 6) {
        const size_t idx = std::stoul(field);
        v = idx < a.args.size() ? &a.args[idx] : nullptr;
      } else {
        v = a.kwarg(field);
        if (v == nullptr) fail("format: unsupported or missing field '{" + field + "}'");
      }
      if (v == nullptr) fail("format: not enough arguments");
      out.append(*v);
      if (out.size() > kMaxOutputBytes) fail_limit("format result too large");
      i = close;
    } else if (c == '}') {
      fail("format: single '}' encountered");
    } else {
      out.append_substr(fmt_value, i, 1);
    }
  }
  return out.take();
}

bool string_method(const Value& sv, const std::string& name, const CallArgs& a, Value* r) {
  const std::string& s = sv.as_string();
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto [b, e] =
        python_strip_bounds(s, opt_string(arg(a, 0, "chars"), "chars"), name != "rstrip", name != "lstrip");
    *r = sv.substr(b, e - b);
  } else if (name == "split" || name == "rsplit") {
    const std::string* sep = opt_string(arg(a, 0, "sep"), "sep");
    const int64_t maxsplit = opt_int(arg(a, 1, "maxsplit"), -1);
    *r = strings_to_array(name == "split" ? python_split(s, sep, maxsplit) : python_rsplit(s, sep, maxsplit), sv);
  } else if (name == "splitlines") {
    *r = strings_to_array(python_splitlines(s), sv);
  } else if (name == "startswith" || name == "endswith") {
    const Value* affix = arg(a, 0, "prefix");
    if (affix == nullptr) fail(name + "() takes at least 1 argument");
    *r = Value(affix_match(s, *affix, name == "startswith"));
  } else if (name == "upper") {
    *r = sv.remap(ascii_upper(s));
  } else if (name == "lower") {
    *r = sv.remap(ascii_lower(s));
  } else if (name == "title") {
    *r = sv.remap(python_title(s));
  } else if (name == "capitalize") {
    *r = sv.remap(python_capitalize(s));
  } else if (name == "replace") {
    if (a.args.size() < 2 || !a.args[0].is_string() || !a.args[1].is_string()) fail("replace() needs two strings");
    *r = replace_text(sv, a.args[0].as_string(), a.args[1], opt_int(arg(a, 2, "count"), -1));
  } else if (name == "find" || name == "count") {
    const std::string* sub = opt_string(arg(a, 0, "sub"), "sub");
    if (sub == nullptr) fail(name + "() needs a string");
    if (name == "find") {
      const size_t p = s.find(*sub);
      *r = Value(p == std::string::npos ? int64_t{-1} : length_of(Value(s.substr(0, p))));
    } else {
      int64_t n = 0;
      if (sub->empty()) {
        n = length_of(Value(s)) + 1;
      } else {
        for (size_t p = s.find(*sub); p != std::string::npos; p = s.find(*sub, p + sub->size())) ++n;
      }
      *r = Value(n);
    }
  } else if (name == "join") {
    if (a.args.size() != 1) fail("join() takes exactly one argument");
    TextBuilder out;
    bool first = true;
    for (const Value& item : iterate(a.args[0])) {
      if (!item.is_string()) fail(std::string("join() expects strings, found ") + item.type_name());
      if (!first) out.append(sv);
      first = false;
      out.append(item);
      if (out.size() > kMaxOutputBytes) fail_limit("join result too large");
    }
    *r = out.take();
  } else if (name == "isdigit") {
    *r = Value(all_chars(s, [](char c) { return c >= '0' && c <= '9'; }));
  } else if (name == "isspace") {
    *r = Value(all_chars(s, [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }));
  } else if (name == "isalpha") {
    *r = Value(all_chars(s, [](char c) { return (c | 32) >= 'a' && (c | 32) <= 'z'; }));
  } else if (name == "isalnum") {
    *r = Value(all_chars(s, [](char c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9'); }));
  } else if (name == "format") {
    *r = python_format(sv, a);
  } else {
    return false;
  }
  return true;
}

bool dict_method(const Object& o, const std::string& name, const CallArgs& a, Value* r) {
  if (name == "items") {
    Array out;
    for (const auto& [k, v] : o.items) out.push_back(Value(Array{key_value(o, k), v}));
    *r = Value(std::move(out));
  } else if (name == "keys") {
    Array out;
    for (const auto& kv : o.items) out.push_back(key_value(o, kv.first));
    *r = Value(std::move(out));
  } else if (name == "values") {
    Array out;
    for (const auto& kv : o.items) out.push_back(kv.second);
    *r = Value(std::move(out));
  } else if (name == "get") {
    const Value* key = arg(a, 0, "key");
    if (key == nullptr) fail("get() takes at least 1 argument");
    const Value* found = key->is_string() ? o.find(key->as_string()) : nullptr;
    const Value* def = arg(a, 1, "default");
    *r = found != nullptr ? *found : (def != nullptr ? *def : Value(None{}));
  } else {
    return false;
  }
  return true;
}

std::shared_ptr<Function> native(std::string name, std::function<Value(Interpreter&, const CallArgs&)> fn) {
  auto f = std::make_shared<Function>();
  f->name = std::move(name);
  f->native = std::move(fn);
  return f;
}

Value range_fn(Interpreter& interp, const CallArgs& a) {
  for (const Value& v : a.args) {
    if (!v.is_int()) fail("range() arguments must be integers");
  }
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  if (a.args.size() == 1) {
    stop = a.args[0].as_int();
  } else if (a.args.size() == 2 || a.args.size() == 3) {
    start = a.args[0].as_int();
    stop = a.args[1].as_int();
    if (a.args.size() == 3) step = a.args[2].as_int();
  } else {
    fail("range() takes 1 to 3 integer arguments");
  }
  if (step == 0) fail("range() step must not be zero");
  Array out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= kMaxItems) fail_limit("range() too large");
    if ((out.size() & 1023) == 0) interp.charge(64);
    out.emplace_back(i);
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value(std::move(out));
}

Value make_dict(const CallArgs& a, bool is_namespace) {
  Object o;
  o.is_namespace = is_namespace;
  for (const Value& v : a.args) {
    if (!v.is_object()) fail("expected a dict as positional argument");
    o.caller_keys = o.caller_keys || v.as_object().caller_keys;
    for (const auto& [k, x] : v.as_object().items) o.set(k, x);
  }
  for (const auto& [k, x] : a.kwargs) o.set(k, x);
  return Value(std::move(o));
}

}  // namespace

bool call_method(Interpreter& interp, const Value& obj, const std::string& name, const CallArgs& args,
                 Value* result) {
  interp.charge();
  if (obj.is_string()) return string_method(obj, name, args, result);
  if (obj.is_object()) return dict_method(obj.as_object(), name, args, result);
  return false;
}

bool apply_test(Interpreter& interp, const std::string& name, const Value& v, const CallArgs& a) {
  interp.charge();
  const Value* other = arg(a, 0, "value");
  auto need_other = [&]() -> const Value& {
    if (other == nullptr) fail("test '" + name + "' needs an argument");
    return *other;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_string() || v.is_array() || v.is_object() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_array() || v.is_object();
  if (name == "callable") return v.is_function();
  if (name == "lower") return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
  if (name == "odd" || name == "even") {
    if (!v.is_int()) fail("test '" + name + "' needs an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value& d = need_other();
    if (!v.is_int() || !d.is_int() || d.as_int() == 0) fail("divisibleby needs non-zero integers");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "sameas") {
    const Value& o = need_other();
    if (v.is_array() && o.is_array()) return &v.as_array() == &o.as_array();
    if (v.is_object() && o.is_object()) return &v.as_object() == &o.as_object();
    if (v.is_string() || o.is_string() || v.kind() != o.kind()) return false;
    return values_equal(v, o);
  }
  if (name == "eq" || name == "equalto" || name == "==") return compare_op("==", v, need_other());
  if (name == "ne" || name == "!=") return compare_op("!=", v, need_other());
  if (name == "lt" || name == "lessthan" || name == "<") return compare_op("<", v, need_other());
  if (name == "le" || name == "<=") return compare_op("<=", v, need_other());
  if (name == "gt" || name == "greaterthan" || name == ">") return compare_op(">", v, need_other());
  if (name == "ge" || name == ">=") return compare_op(">=", v, need_other());
  if (name == "in") return contains(need_other(), v);
  fail("unknown test '" + name + "'");
}

void install_globals(Scope& scope) {
  scope.set("range", Value(native("range", range_fn)));
  scope.set("namespace", Value(native("namespace", [](Interpreter&, const CallArgs& a) { return make_dict(a, true); })));
  scope.set("dict", Value(native("dict", [](Interpreter&, const CallArgs& a) { return make_dict(a, false); })));
  scope.set("raise_exception", Value(native("raise_exception", [](Interpreter&, const CallArgs& a) -> Value {
              TemplateError err;
              err.message = a.args.empty() ? std::string("raise_exception() called") : a.args[0].to_str();
              err.raised = true;
              throw err;
            })));
  scope.set("strftime_now", Value(native("strftime_now", [](Interpreter&, const CallArgs& a) -> Value {
              if (a.args.size() != 1 || !a.args[0].is_string()) fail("strftime_now() takes one format string");
              const std::string& fmt = a.args[0].as_string();
              if (fmt.size() > 256) fail("strftime_now(): format too long");
              const std::time_t now = std::time(nullptr);
              std::tm tm{};
              localtime_r(&now, &tm);
              char buf[1024];
              const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
              return Value(std::string(buf, n));
            })));
}

}  // namespace tessera::tmpl
