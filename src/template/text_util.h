// String helpers with Python / Jinja2 semantics for the template builtins.
// Case mapping is ASCII-only (other characters pass through unchanged);
// whitespace means the ASCII whitespace characters.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::tmpl {

std::string ascii_upper(std::string s);
std::string ascii_lower(std::string s);
// str.capitalize(): first character upper, the rest lower.
std::string python_capitalize(const std::string& s);
// str.title(): upper after any non-letter, lower elsewhere.
std::string python_title(const std::string& s);
// Jinja's |title: words split at whitespace, '-', '(', '{', '[', '<'.
std::string jinja_title(const std::string& s);
// str.strip/lstrip/rstrip([chars]); `chars` nullptr means whitespace.
std::string python_strip(const std::string& s, const std::string* chars, bool left, bool right);
// The [begin, end) byte range python_strip() keeps.
std::pair<size_t, size_t> python_strip_bounds(const std::string& s, const std::string* chars, bool left, bool right);
// str.replace(old, new[, count]); count < 0 means all.
std::string python_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);
// str.split([sep[, maxsplit]]); sep nullptr splits on whitespace runs.
// Throws TemplateError for an empty separator.
std::vector<std::string> python_split(const std::string& s, const std::string* sep, int64_t maxsplit);
// str.rsplit([sep[, maxsplit]]).
std::vector<std::string> python_rsplit(const std::string& s, const std::string* sep, int64_t maxsplit);
// str.splitlines() (without keepends).
std::vector<std::string> python_splitlines(const std::string& s);
// Jinja's |indent(width, first, blank) with `pad` as the indentation.
std::string jinja_indent(const std::string& s, const std::string& pad, bool first, bool blank);

}  // namespace tessera::tmpl
