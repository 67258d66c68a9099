// Value: the data model of the chat-template interpreter (src/template/).
//
// Jinja2 templates operate on Python objects; chat templates only see
// JSON-like data, so a Value is one of: undefined, none, bool, int (int64),
// float (double), string (UTF-8 bytes), array (Python list/tuple), object
// (Python dict with string keys, insertion-ordered) or function (a builtin
// or a template macro). Arrays and objects are shared by reference like
// Python objects; templates cannot mutate them (transformers renders with
// jinja2's ImmutableSandboxedEnvironment), except namespace() objects via
// `{% set ns.x = ... %}`.
//
// Formatting follows Python: to_str() is str(), repr() is repr() (so
// `{{ [1, 'a'] }}` renders "[1, 'a']" and `{{ none }}` renders "None").
//
// Provenance: a string remembers which of its bytes came from the caller
// (values passed as caller context: message content, tools, ... — see
// ChatTemplate::render_tagged) rather than from the template's own source
// (its text and string literals) or trusted variables (bos_token, ...).
// Concatenation, slicing, indexing, iteration, strip, join, format, replace,
// repr/tojson and ASCII case mapping keep the exact byte ranges; any other
// builtin that makes a new string from a string holding caller bytes marks
// the whole result as caller text (never the other way round). Dict keys
// from caller JSON are caller text wherever they become strings (Object::
// caller_keys).
// Internal to the template library; the public API is chat_template.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::tmpl {

class Value;
class Interpreter;
class Scope;
struct Node;

using Array = std::vector<Value>;

// Byte range [begin, end) of a string that came from the caller.
struct CallerRange {
  size_t begin = 0;
  size_t end = 0;
};
// Sorted, disjoint, non-empty and non-adjacent ranges.
using CallerRanges = std::vector<CallerRange>;

// A Python dict with string keys that keeps insertion order.
struct Object {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // created by namespace(); attributes may be assigned
  bool caller_keys = false;   // the keys came from the caller (caller JSON, or built from caller strings)
  int namespace_depth = 1;     // nesting depth of a namespace, updated by set_attribute

  // The value stored under `key`, or nullptr.
  const Value* find(std::string_view key) const;
  // Inserts or replaces `key`.
  void set(std::string key, Value value);
};

// Arguments of a call: positional then keyword, in source order.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  // The keyword argument `name`, or nullptr.
  const Value* kwarg(std::string_view name) const;
};

// A callable: a builtin (native) or a `{% macro %}` (macro + closure scope).
struct Function {
  std::string name;
  std::function<Value(Interpreter&, const CallArgs&)> native;
  const Node* macro = nullptr;   // owned by the parsed template
  std::weak_ptr<Scope> closure;  // the scope the macro was defined in (kept alive by the Interpreter)
};

// Marks "no such variable/attribute"; `hint` names it for error messages.
struct Undefined {
  std::string hint;
};
struct None {};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };

  Value() = default;  // undefined
  Value(Undefined u) : v_(std::move(u)) {}
  Value(None n) : v_(n) {}
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(double f) : v_(f) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  // A string whose bytes in `caller` came from the caller (ranges within s).
  Value(std::string s, CallerRanges caller);
  // A string that came from the caller in full.
  static Value caller_text(std::string s);
  // Containers: compute the nesting depth from the (immediate) elements and
  // throw TemplateError beyond kMaxValueDepth (src/template/error.h).
  Value(Array a) : Value(std::make_shared<Array>(std::move(a))) {}
  Value(Object o) : Value(std::make_shared<Object>(std::move(o))) {}
  Value(std::shared_ptr<Array> a);
  Value(std::shared_ptr<Object> o);
  Value(std::shared_ptr<Function> f) : v_(std::move(f)) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // int, float or bool (Python bool is an int subclass).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }
  bool is_function() const { return kind() == Kind::kFunction; }

  // Accessors; each requires the matching kind.
  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  Object& mutable_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  const std::shared_ptr<Function>& as_function() const { return std::get<std::shared_ptr<Function>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }
  // Nesting depth: 0 for scalars, 1 + deepest element for containers.
  int depth() const;
  // True for a namespace() object or a container holding one (namespaces may
  // not be stored inside namespaces, which rules out reference cycles).
  bool holds_namespace() const { return holds_namespace_; }
  // An int, float or bool as a double.
  double to_double() const;

  // Strings: whether any byte came from the caller, and which.
  bool has_caller_text() const { return caller_ != nullptr; }
  const CallerRanges& caller_ranges() const;
  // For a string: bytes [pos, pos + n) with their provenance.
  Value substr(size_t pos, size_t n) const;
  // For a string: `text` (same length, e.g. case-mapped) with this string's
  // provenance; a text of another length is all caller text if this string
  // holds any.
  Value remap(std::string text) const;
  // Python str() with provenance: strings as they are, containers as their
  // repr with caller strings and caller keys marked.
  Value text() const;

  // Python truthiness: undefined, none, false, 0, 0.0, "", [] and {} are false.
  bool truthy() const;
  // Python str(): undefined -> "", none -> "None", true -> "True", 1.5 -> "1.5",
  // lists and dicts as Python repr.
  std::string to_str() const;
  // Python repr(): strings quoted ('a', "it's").
  std::string repr() const;
  // Python type name for error messages ("str", "int", "list", "dict", ...).
  const char* type_name() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<Array>,
               std::shared_ptr<Object>, std::shared_ptr<Function>>
      v_;
  std::shared_ptr<const CallerRanges> caller_;  // strings only; null: no caller bytes
  uint16_t depth_ = 0;
  bool holds_namespace_ = false;
};

// Builds a string piece by piece, keeping which bytes came from the caller.
class TextBuilder {
 public:
  // v.text(): its bytes and provenance.
  void append(const Value& v);
  // Bytes [pos, pos + n) of the string `s` with their provenance.
  void append_substr(const Value& s, size_t pos, size_t n);
  // Raw bytes, caller text or not.
  void append(std::string_view bytes, bool caller);
  // Marks bytes [begin, end) of what was built as caller text.
  void mark_caller(size_t begin, size_t end);
  size_t size() const { return text_.size(); }
  std::string& raw() { return text_; }
  const std::string& str() const { return text_; }
  const CallerRanges& caller() const { return caller_; }
  // The string built so far (the builder is left empty).
  Value take();

 private:
  std::string text_;
  CallerRanges caller_;
};

// A new string made from `inputs` by an operation that does not track
// provenance: all caller text if any input (a string, or anything
// text() of which holds caller bytes) does.
Value derived_text(std::string text, std::initializer_list<const Value*> inputs);

// Python ==: numbers compare by value (True == 1), containers element-wise,
// undefined equals only undefined, functions by identity. Throws
// TemplateError (kResourceExhausted) past kMaxSteps element comparisons.
bool values_equal(const Value& a, const Value& b);

// Python repr() of a float (shortest round-trip: 0.1 -> "0.1", 1.0 -> "1.0", 1e16 -> "1e+16").
std::string format_float(double f);

// Converts JSON input into a Value (objects keep the json's key order:
// sorted for nlohmann::json, insertion order for nlohmann::ordered_json).
// With `caller`, every string and dict key is caller text.
// Throws TemplateError for input nested deeper than kMaxValueDepth.
Value from_json(const nlohmann::json& j, bool caller = false);
Value from_json(const nlohmann::ordered_json& j, bool caller = false);

// Options of the tojson filter, matching Python's json.dumps as used by
// transformers (ensure_ascii=False, indent=None, separators=None, sort_keys=False).
struct JsonOptions {
  int indent = -1;  // < 0: single line
  std::string indent_str;  // when set, used per level instead of `indent` spaces
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator;  // default ", " (or "," when indenting)
  std::string key_separator = ": ";
  bool custom_item_separator = false;
};

// json.dumps(value) with `options`, caller strings and keys marked as
// caller text in `out`. Returns false (and sets `error`) for values JSON
// cannot hold (undefined, functions; NaN is written as NaN like Python) or
// when the text would exceed kMaxOutputBytes.
bool dump_json(const Value& value, const JsonOptions& options, TextBuilder* out, std::string* error);

}  // namespace tessera::tmpl
