#include "template/lexer.h"

#include <cerrno>
#include <cstdlib>

#include "template/error.h"

namespace tessera::tmpl {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options) : src_(std::move(source)), options_(options) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        advance_to(src_.size());
        break;
      }
      const char kind = src_[tag + 1];
      size_t p = tag + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      std::string text = src_.substr(pos_, tag - pos_);
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+' && options_.lstrip_blocks && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if (l_pos > 0 || line_starting) {
          bool all_ws = l_pos < text.size();
          for (size_t i = l_pos; i < text.size(); ++i) all_ws = all_ws && is_space(text[i]);
          if (all_ws) text.resize(l_pos);
        }
      }
      emit_text(std::move(text), pos_);
      advance_to(tag);
      const int tag_line = line_;
      const int tag_col = column();
      if (kind == '#') {
        size_t e = src_.find("#}", p);
        if (e == std::string::npos) fail_at(tag_line, tag_col, "unclosed comment '{#'");
        size_t after = e + 2;
        if (e > p && src_[e - 1] == '-') {
          while (after < src_.size() && is_space(src_[after])) ++after;
        } else if (!(e > p && src_[e - 1] == '+') && options_.trim_blocks && after < src_.size() &&
                   src_[after] == '\n') {
          ++after;
        }
        line_starting = src_[after - 1] == '\n';
        advance_to(after);
        continue;
      }
      const bool block = kind == '%';
      push(block ? TokenType::kBlockBegin : TokenType::kVarBegin, block ? "{%" : "{{", tag_line, tag_col);
      advance_to(p);
      line_starting = lex_tag(block, tag_line, tag_col);
    }
    push(TokenType::kEnd, "", line_, column());
    return std::move(tokens_);
  }

 private:
  int column() const { return static_cast<int>(pos_ - line_start_) + 1; }

  void advance_to(size_t target) {
    for (; pos_ < target; ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      }
    }
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void push(TokenType type, std::string text, int line, int col) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.line = line;
    t.column = col;
    tokens_.push_back(std::move(t));
  }

  void emit_text(std::string text, size_t at) {
    if (text.empty()) return;
    // Position of `at` (pos_ has not moved past it yet).
    push(TokenType::kText, std::move(text), line_, static_cast<int>(at - line_start_) + 1);
  }

  // Lexes the inside of a block or variable tag up to and including its end
  // marker. Returns whether the consumed text ends with a newline.
  bool lex_tag(bool block, int tag_line, int tag_col) {
    const char close = block ? '%' : '}';
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) {
        fail_at(tag_line, tag_col, block ? "unclosed tag '{%' (missing '%}')" : "unclosed '{{' (missing '}}')");
      }
      const int line = line_;
      const int col = column();
      const char c = src_[pos_];
      if (depth == 0) {
        const bool minus = c == '-' && src_.compare(pos_ + 1, 2, std::string{close, '}'}) == 0;
        const bool plus = block && c == '+' && src_.compare(pos_ + 1, 2, "%}") == 0;
        if (minus || plus || (c == close && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}')) {
          size_t after = pos_ + (minus || plus ? 3 : 2);
          if (minus) {
            while (after < src_.size() && is_space(src_[after])) ++after;
          } else if (block && !plus && options_.trim_blocks && after < src_.size() && src_[after] == '\n') {
            ++after;
          }
          push(block ? TokenType::kBlockEnd : TokenType::kVarEnd, block ? "%}" : "}}", line, col);
          const bool nl = src_[after - 1] == '\n';
          advance_to(after);
          return nl;
        }
      }
      if (is_name_start(c)) {
        size_t e = pos_;
        while (e < src_.size() && is_name_char(src_[e])) ++e;
        push(TokenType::kName, src_.substr(pos_, e - pos_), line, col);
        advance_to(e);
      } else if (is_digit(c)) {
        lex_number(line, col);
      } else if (c == '\'' || c == '"') {
        lex_string(line, col);
      } else {
        static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char* t : kTwo) {
          if (src_.compare(pos_, 2, t) == 0) op = t;
        }
        if (op.empty()) {
          if (std::string_view("+-*/%~()[]{}<>=.:|,;").find(c) == std::string_view::npos) {
            fail_at(line, col, std::string("unexpected character '") + c + "' in tag");
          }
          op = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') {
            if (++depth > kMaxNesting) fail_at(line, col, "brackets nested too deeply");
          } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0) fail_at(line, col, std::string("unexpected '") + c + "'");
            --depth;
          }
        }
        push(TokenType::kOp, op, line, col);
        advance_to(pos_ + op.size());
      }
    }
  }

  void lex_number(int line, int col) {
    size_t e = pos_;
    std::string digits;
    auto take_digits = [&] {
      while (e < src_.size() && (is_digit(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() && is_digit(src_[e + 1])))) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    take_digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      digits += '.';
      ++e;
      take_digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t k = e + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_digit(src_[k])) {
        is_float = true;
        digits += 'e';
        digits.append(src_, e + 1, k - e - 1);
        e = k;
        take_digits();
      }
    }
    Token t;
    t.line = line;
    t.column = col;
    t.text = src_.substr(pos_, e - pos_);
    if (is_float) {
      t.type = TokenType::kFloat;
      t.float_value = std::strtod(digits.c_str(), nullptr);
    } else {
      t.type = TokenType::kInt;
      errno = 0;
      const unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
      if (errno != 0 || v > static_cast<unsigned long long>(INT64_MAX)) fail_at(line, col, "integer literal too large");
      t.int_value = static_cast<int64_t>(v);
    }
    tokens_.push_back(std::move(t));
    advance_to(e);
  }

  void lex_string(int line, int col) {
    const char quote = src_[pos_];
    std::string value;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= src_.size()) fail_at(line, col, "unterminated string literal");
      const char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) fail_at(line, col, "unterminated string literal");
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const int h = i + k < src_.size() ? hex_value(src_[i + k]) : -1;
            if (h < 0) fail_at(line, col, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) fail_at(line, col, "invalid \\U escape in string literal");
          append_utf8(cp, &value);
          i += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i) {
              cp = cp * 8 + static_cast<uint32_t>(src_[i] - '0');
            }
            append_utf8(cp, &value);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    Token t;
    t.type = TokenType::kString;
    t.text = std::move(value);
    t.line = line;
    t.column = col;
    tokens_.push_back(std::move(t));
    advance_to(i + 1);
  }

  std::string src_;
  LexerOptions options_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  std::vector<Token> tokens_;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(normalize_newlines(source), options).run();
}

}  // namespace tessera::tmpl
