#include "template/text_util.h"

#include <algorithm>

#include "template/error.h"

namespace tessera::tmpl {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || (c >= 0x1c && c <= 0x1f); }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char up(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
char down(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
bool is_line_break(char c) { return c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e); }

}  // namespace

std::string ascii_upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), up);
  return s;
}

std::string ascii_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), down);
  return s;
}

std::string python_capitalize(const std::string& s) {
  std::string out = ascii_lower(s);
  if (!out.empty()) out[0] = up(out[0]);
  return out;
}

std::string python_title(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (char& c : out) {
    const bool letter = is_alpha(c);
    if (letter) c = prev_letter ? down(c) : up(c);
    prev_letter = letter || static_cast<unsigned char>(c) >= 0x80;
  }
  return out;
}

std::string jinja_title(const std::string& s) {
  std::string out = s;
  bool word_start = true;
  for (char& c : out) {
    const bool sep = is_ws(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      word_start = true;
      continue;
    }
    c = word_start ? up(c) : down(c);
    word_start = false;
  }
  return out;
}

std::string python_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  const auto [b, e] = python_strip_bounds(s, chars, left, right);
  return s.substr(b, e - b);
}

std::pair<size_t, size_t> python_strip_bounds(const std::string& s, const std::string* chars, bool left,
                                              bool right) {
  auto strip_char = [&](char c) { return chars != nullptr ? chars->find(c) != std::string::npos : is_ws(c); };
  size_t b = 0;
  size_t e = s.size();
  if (left) {
    while (b < e && strip_char(s[b])) ++b;
  }
  if (right) {
    while (e > b && strip_char(s[e - 1])) --e;
  }
  return {b, e};
}

std::string python_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Inserts `to` before every character and at the end.
    int64_t n = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
      const bool boundary = i == s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
      if (boundary && (count < 0 || n < count)) {
        out += to;
        ++n;
      }
      if (i < s.size()) out += s[i];
      if (out.size() > kMaxOutputBytes) fail_limit("replace result too large");
    }
    return out;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    ++n;
    if (out.size() > kMaxOutputBytes) fail_limit("replace result too large");
  }
  out.append(s, pos, std::string::npos);
  return out;
}

std::vector<std::string> python_split(const std::string& s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep == nullptr) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_ws(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
        size_t e = s.size();
        while (e > i && is_ws(s[e - 1])) --e;
        out.push_back(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_ws(s[j])) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  if (sep->empty()) fail("empty separator");
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t hit = s.find(*sep, pos);
    if (hit == std::string::npos) break;
    out.push_back(s.substr(pos, hit - pos));
    pos = hit + sep->size();
  }
  out.push_back(s.substr(pos));
  return out;
}

std::vector<std::string> python_rsplit(const std::string& s, const std::string* sep, int64_t maxsplit) {
  if (maxsplit < 0) return python_split(s, sep, -1);
  std::vector<std::string> out;
  if (sep == nullptr) {
    size_t e = s.size();
    while (true) {
      while (e > 0 && is_ws(s[e - 1])) --e;
      if (e == 0) break;
      if (static_cast<int64_t>(out.size()) >= maxsplit) {
        size_t b = 0;
        while (b < e && is_ws(s[b])) ++b;
        out.push_back(s.substr(b, e - b));
        break;
      }
      size_t b = e;
      while (b > 0 && !is_ws(s[b - 1])) --b;
      out.push_back(s.substr(b, e - b));
      e = b;
    }
  } else {
    if (sep->empty()) fail("empty separator");
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit && end >= sep->size()) {
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string::npos) break;
      out.push_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.push_back(s.substr(0, end));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> python_splitlines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!is_line_break(s[i])) continue;
    out.push_back(s.substr(start, i - start));
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string jinja_indent(const std::string& s, const std::string& pad, bool first, bool blank) {
  const std::vector<std::string> lines = python_splitlines(s + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    const bool indent_line = i == 0 ? first : (blank || !lines[i].empty());
    if (indent_line) out += pad;
    out += lines[i];
    if (out.size() > kMaxOutputBytes) fail_limit("indent result too large");
  }
  return out;
}

}  // namespace tessera::tmpl
