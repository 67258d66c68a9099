// Python semantics of Jinja2 operators on Values (designer docs, "Math",
// "Comparisons", "Other Operators"): arithmetic, comparisons, membership,
// iteration, indexing and slicing. Errors (type mismatches, undefined
// operands, division by zero) throw TemplateError (src/template/error.h);
// results bigger than kMaxOutputBytes / kMaxItems throw kResourceExhausted.
#pragma once

#include <string>
#include <vector>

#include "template/value.h"

namespace tessera::tmpl {

// a <op> b for op in + - * / // % ** ~.
Value binary_op(const std::string& op, const Value& a, const Value& b);
// a <op> b for op in == != < <= > >= in "not in".
bool compare_op(const std::string& op, const Value& a, const Value& b);
// Python `item in container` (substring, list element, dict key; false for undefined).
bool contains(const Value& container, const Value& item);
// The elements `for x in v` visits: list items, dict keys, string
// characters (code points); nothing for undefined. Throws for other kinds.
Array iterate(const Value& v);
// obj[key]: dict key, list/string index (negative from the end). Missing
// keys and out-of-range indices give undefined, like Jinja's getitem.
Value get_item(const Value& obj, const Value& key);
// obj.name: a dict entry or undefined (undefined.name is undefined too).
Value get_attr(const Value& obj, const std::string& name);
// obj[start:stop:step] for lists and strings; absent bounds are undefined/none.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// The UTF-8 code points of `s` (invalid bytes count as one character each).
std::vector<std::string> utf8_chars(const std::string& s);
// Where each code point of `s` starts (as utf8_chars counts them).
std::vector<size_t> utf8_char_starts(const std::string& s);
// The code points of the string `s` as strings, with their provenance.
Array string_chars(const Value& s);
// A key of `o` as a string Value (caller text when o.caller_keys).
Value key_value(const Object& o, const std::string& key);
// The Python len() of a string (code points), list or dict; 0 for undefined.
int64_t length_of(const Value& v);
// str.replace(from, to[, count]) on the string `s` with provenance: the
// kept bytes of `s` and each inserted `to` keep theirs (an empty `from`
// makes all caller text when either string holds any).
Value replace_text(const Value& s, const std::string& from, const Value& to, int64_t count);
// Fails with "'<hint>' is undefined" when `v` is undefined.
void require_defined(const Value& v);

}  // namespace tessera::tmpl
