// Builtin filters (see builtins.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "template/builtins.h"
#include "template/error.h"
#include "template/operators.h"
#include "template/text_util.h"

namespace tessera::tmpl {
namespace {

// Positional argument `index` or keyword `name`; nullptr when absent.
const Value* arg(const CallArgs& a, size_t index, std::string_view name) {
  if (index < a.args.size()) return &a.args[index];
  return a.kwarg(name);
}

Value attribute_of(const Value& v, const Value& attr) {
  // "a.b" walks nested attributes; integers index lists.
  if (attr.is_int()) return get_item(v, attr);
  Value cur = v;
  const std::string path = attr.to_str();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    cur = get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value tojson(const Value& v, const CallArgs& a) {
  JsonOptions o;
  if (const Value* indent = arg(a, 0, "indent"); indent != nullptr && !indent->is_none()) {
    if (indent->is_string()) {
      o.indent_str = indent->as_string();
      o.indent = 0;
    } else if (indent->is_int()) {
      o.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
    } else {
      fail("tojson: indent must be an int or a string");
    }
  }
  if (const Value* ea = a.kwarg("ensure_ascii")) o.ensure_ascii = ea->truthy();
  if (const Value* sk = a.kwarg("sort_keys")) o.sort_keys = sk->truthy();
  if (const Value* sep = a.kwarg("separators"); sep != nullptr && !sep->is_none()) {
    if (!sep->is_array() || sep->as_array().size() != 2 || !sep->as_array()[0].is_string() ||
        !sep->as_array()[1].is_string()) {
      fail("tojson: separators must be a pair of strings");
    }
    o.custom_item_separator = true;
    o.item_separator = sep->as_array()[0].as_string();
    o.key_separator = sep->as_array()[1].as_string();
  }
  TextBuilder out;
  std::string error;
  if (!dump_json(v, o, &out, &error)) {
    if (v.is_undefined()) require_defined(v);
    fail("tojson: " + error);
  }
  return out.take();
}

Value select(Interpreter& interp, const Value& v, const CallArgs& a, bool by_attr, bool keep) {
  size_t test_index = by_attr ? 1 : 0;
  if (by_attr && a.args.empty()) fail("selectattr/rejectattr need an attribute name");
  std::string test = test_index < a.args.size() ? a.args[test_index].to_str() : "";
  CallArgs test_args;
  for (size_t i = test_index + 1; i < a.args.size(); ++i) test_args.args.push_back(a.args[i]);
  Array out;
  for (const Value& item : iterate(v)) {
    interp.charge();
    const Value subject = by_attr ? attribute_of(item, a.args[0]) : item;
    const bool ok = test.empty() ? subject.truthy() : apply_test(interp, test, subject, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value(std::move(out));
}

Value map_filter(Interpreter& interp, const Value& v, const CallArgs& a) {
  Array out;
  if (const Value* attr = a.kwarg("attribute")) {
    const Value* def = a.kwarg("default");
    for (const Value& item : iterate(v)) {
      Value x = attribute_of(item, *attr);
      out.push_back(x.is_undefined() && def != nullptr ? *def : x);
    }
    return Value(std::move(out));
  }
  if (a.args.empty()) fail("map needs a filter name or attribute=");
  const std::string filter = a.args[0].to_str();
  CallArgs rest;
  for (size_t i = 1; i < a.args.size(); ++i) rest.args.push_back(a.args[i]);
  rest.kwargs = a.kwargs;
  for (const Value& item : iterate(v)) {
    interp.charge();
    out.push_back(apply_filter(interp, filter, item, rest));
  }
  return Value(std::move(out));
}

bool less_than(const Value& x, const Value& y, bool case_sensitive) {
  if (!case_sensitive && x.is_string() && y.is_string()) return ascii_lower(x.as_string()) < ascii_lower(y.as_string());
  return compare_op("<", x, y);
}

Value sort_filter(const Value& v, const CallArgs& a) {
  const Value* rev = arg(a, 0, "reverse");
  const Value* cs = arg(a, 1, "case_sensitive");
  const Value* attr = arg(a, 2, "attribute");
  const bool case_sensitive = cs != nullptr && cs->truthy();
  Array items = iterate(v);
  auto key = [&](const Value& x) { return attr != nullptr ? attribute_of(x, *attr) : x; };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Value& x, const Value& y) { return less_than(key(x), key(y), case_sensitive); });
  if (rev != nullptr && rev->truthy()) std::reverse(items.begin(), items.end());
  return Value(std::move(items));
}

Value to_int(const Value& v, const CallArgs& a) {
  const Value def = arg(a, 0, "default") ? *arg(a, 0, "default") : Value(0);
  if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
  if (v.is_int()) return v;
  if (v.is_float()) {
    if (!std::isfinite(v.as_float()) || std::fabs(v.as_float()) > 9.2e18) return def;
    return Value(static_cast<int64_t>(v.as_float()));
  }
  if (v.is_string()) {
    const std::string s = python_strip(v.as_string(), nullptr, true, true);
    char* end = nullptr;
    errno = 0;
    const long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value(static_cast<int64_t>(i));
    const double d = std::strtod(s.c_str(), &end);  // jinja's int filter also accepts "3.5"
    if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value(static_cast<int64_t>(d));
    }
  }
  return def;
}

Value to_float(const Value& v, const CallArgs& a) {
  const Value def = arg(a, 0, "default") ? *arg(a, 0, "default") : Value(0.0);
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string()) {
    const std::string s = python_strip(v.as_string(), nullptr, true, true);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
  }
  return def;
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value min_max(const Value& v, const CallArgs& a, bool want_max) {
  const Value* attr = arg(a, 1, "attribute");
  const Value* cs = arg(a, 0, "case_sensitive");
  const bool case_sensitive = cs != nullptr && cs->truthy();
  Array items = iterate(v);
  if (items.empty()) return Value(Undefined{"min/max of an empty sequence"});
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const Value x = attr ? attribute_of(items[i], *attr) : items[i];
    const Value b = attr ? attribute_of(items[best], *attr) : items[best];
    if (want_max ? less_than(b, x, case_sensitive) : less_than(x, b, case_sensitive)) best = i;
  }
  return items[best];
}

}  // namespace

Value apply_filter(Interpreter& interp, const std::string& name, const Value& v, const CallArgs& a) {
  if (name == "default" || name == "d") {
    const Value* def = arg(a, 0, "default_value");
    const Value* boolean = arg(a, 1, "boolean");
    const bool use_default = v.is_undefined() || (boolean != nullptr && boolean->truthy() && !v.truthy());
    if (!use_default) return v;
    return def != nullptr ? *def : Value("");
  }
  if (name == "length" || name == "count") return Value(length_of(v));
  if (name == "safe") return v;
  if (name == "string") return v.text();
  if (name == "e" || name == "escape") return derived_text(escape_html(v.to_str()), {&v});
  if (name == "tojson") return tojson(v, a);
  if (name == "trim") {
    const Value* chars = arg(a, 0, "chars");
    const std::string cs = chars != nullptr && chars->is_string() ? chars->as_string() : "";
    const Value t = v.text();
    const auto [b, e] = python_strip_bounds(t.as_string(), chars != nullptr && chars->is_string() ? &cs : nullptr,
                                            true, true);
    return t.substr(b, e - b);
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    const Value t = v.text();
    const std::string& x = t.as_string();
    return t.remap(name == "upper"   ? ascii_upper(x)
                   : name == "lower" ? ascii_lower(x)
                   : name == "title" ? jinja_title(x)
                                     : python_capitalize(x));
  }
  if (name == "replace") {
    const Value* old_s = arg(a, 0, "old");
    const Value* new_s = arg(a, 1, "new");
    const Value* count = arg(a, 2, "count");
    if (old_s == nullptr || new_s == nullptr) fail("replace needs two arguments");
    return replace_text(v.text(), old_s->to_str(), new_s->text(),
                        count != nullptr && count->is_int() ? count->as_int() : -1);
  }
  if (name == "wordcount") return Value(static_cast<int64_t>(python_split(v.to_str(), nullptr, -1).size()));
  if (name == "indent") {
    const Value* width = arg(a, 0, "width");
    const Value* first = arg(a, 1, "first");
    const Value* blank = arg(a, 2, "blank");
    const std::string pad = width == nullptr ? std::string(4, ' ')
                            : width->is_string() ? width->as_string()
                                                 : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                                   width->is_int() ? width->as_int() : 4, 0, 256)),
                                                               ' ');
    return derived_text(
        jinja_indent(v.to_str(), pad, first != nullptr && first->truthy(), blank != nullptr && blank->truthy()),
        {&v, width});
  }
  if (name == "join") {
    const Value* sep = arg(a, 0, "d");
    const Value* attr = arg(a, 1, "attribute");
    TextBuilder out;
    bool first = true;
    for (const Value& item : iterate(v)) {
      if (!first && sep != nullptr) out.append(*sep);
      first = false;
      out.append(attr != nullptr ? attribute_of(item, *attr) : item);
      if (out.size() > kMaxOutputBytes) fail_limit("join result too large");
    }
    return out.take();
  }
  if (name == "first" || name == "last") {
    if (v.is_array()) {
      if (v.as_array().empty()) return Value(Undefined{"first/last of an empty list"});
      return name == "first" ? v.as_array().front() : v.as_array().back();
    }
    Array items = iterate(v);
    if (items.empty()) return Value(Undefined{"first/last of an empty sequence"});
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value(iterate(v));
  if (name == "reverse") {
    if (v.is_string()) {
      const Array chars = string_chars(v);
      TextBuilder out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out.append(*it);
      return out.take();
    }
    Array items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "int") return to_int(v, a);
  if (name == "float") return to_float(v, a);
  if (name == "abs") {
    require_defined(v);
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_int()) return Value(v.as_int() < 0 && v.as_int() != INT64_MIN ? -v.as_int() : v.as_int());
    if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
    fail(std::string("bad operand type for abs(): '") + v.type_name() + "'");
  }
  if (name == "round") {
    const Value* prec = arg(a, 0, "precision");
    const Value* method = arg(a, 1, "method");
    if (!v.is_number()) fail("round needs a number");
    const double scale = std::pow(10.0, prec != nullptr && prec->is_int() ? static_cast<double>(prec->as_int()) : 0.0);
    const std::string m = method != nullptr ? method->to_str() : "common";
    double x = v.to_double() * scale;
    x = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::round(x);
    return Value(x / scale);
  }
  if (name == "items") {
    Array out;
    if (v.is_undefined()) return Value(std::move(out));
    if (!v.is_object()) fail(std::string("items filter needs a dict, got ") + v.type_name());
    for (const auto& [k, x] : v.as_object().items) out.push_back(Value(Array{key_value(v.as_object(), k), x}));
    return Value(std::move(out));
  }
  if (name == "dictsort") {
    if (!v.is_object()) fail("dictsort needs a dict");
    const Value* by = arg(a, 1, "by");
    const bool by_value = by != nullptr && by->to_str() == "value";
    Array out;
    for (const auto& [k, x] : v.as_object().items) out.push_back(Value(Array{key_value(v.as_object(), k), x}));
    std::stable_sort(out.begin(), out.end(), [&](const Value& p, const Value& q) {
      return less_than(p.as_array()[by_value ? 1 : 0], q.as_array()[by_value ? 1 : 0], false);
    });
    return Value(std::move(out));
  }
  if (name == "selectattr") return select(interp, v, a, true, true);
  if (name == "rejectattr") return select(interp, v, a, true, false);
  if (name == "select") return select(interp, v, a, false, true);
  if (name == "reject") return select(interp, v, a, false, false);
  if (name == "map") return map_filter(interp, v, a);
  if (name == "sort") return sort_filter(v, a);
  if (name == "unique") {
    Array out;
    for (const Value& item : iterate(v)) {
      interp.charge(static_cast<int64_t>(out.size()) + 1);
      bool seen = false;
      for (const Value& o : out) seen = seen || values_equal(o, item);
      if (!seen) out.push_back(item);
    }
    return Value(std::move(out));
  }
  if (name == "min") return min_max(v, a, false);
  if (name == "max") return min_max(v, a, true);
  if (name == "sum") {
    const Value* attr = arg(a, 0, "attribute");
    const Value* start = arg(a, 1, "start");
    Value total = start != nullptr ? *start : Value(0);
    for (const Value& item : iterate(v)) total = binary_op("+", total, attr ? attribute_of(item, *attr) : item);
    return total;
  }
  fail("unknown filter '" + name + "'");
}

}  // namespace tessera::tmpl
