// Builtin filters, tests, methods and global functions of the template
// interpreter (Jinja2 designer docs, "List of Builtin Filters", "List of
// Builtin Tests", "List of Global Functions"; Python str/dict methods as
// jinja2's sandbox exposes them; transformers' chat-template globals
// raise_exception and strftime_now, and its tojson).
//
// Filters: abs, capitalize, count, d/default, dictsort, e/escape, first,
//   float, indent, int, items, join, last, length, list, lower, map, max,
//   min, reject, rejectattr, replace, reverse, round, safe, select,
//   selectattr, sort, string, sum, title, tojson, trim, unique, upper,
//   wordcount.
// Tests: boolean, callable, defined, divisibleby, eq/equalto/==, even,
//   false, float, ge/>=, gt/>, in, integer, iterable, le/<=, lower, lt/<,
//   mapping, ne/!=, none, number, odd, sameas, sequence, string, true,
//   undefined, upper.
// Methods: str.{strip, lstrip, rstrip, split, rsplit, splitlines,
//   startswith, endswith, upper, lower, title, capitalize, replace, find,
//   count, join, isdigit, isspace, isalpha, isalnum, format (positional {}
//   and {N} fields only)}, dict.{items, keys, values, get}.
// Globals: range, namespace, dict, raise_exception, strftime_now.
// Unknown names throw TemplateError naming them.
#pragma once

#include <string>

#include "template/interpreter.h"
#include "template/value.h"

namespace tessera::tmpl {

// value | name(args).
Value apply_filter(Interpreter& interp, const std::string& name, const Value& value, const CallArgs& args);
// value is name(args).
bool apply_test(Interpreter& interp, const std::string& name, const Value& value, const CallArgs& args);
// obj.name(args) for the methods above; false when `obj` has no such method.
bool call_method(Interpreter& interp, const Value& obj, const std::string& name, const CallArgs& args,
                 Value* result);
// Defines the global functions in `scope`.
void install_globals(Scope& scope);

}  // namespace tessera::tmpl
