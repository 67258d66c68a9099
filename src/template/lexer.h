// Lexer: splits Jinja2 template source into text and tag tokens.
//
// Follows jinja2's lexer (Jinja2 template designer docs, "Whitespace
// Control"; jinja2/lexer.py behaviour):
//   - "\r\n" and "\r" become "\n"; one trailing newline of the source is
//     dropped (keep_trailing_newline=False);
//   - `{%-`, `{{-`, `{#-` strip all whitespace before the tag; `-%}`, `-}}`,
//     `-#}` strip all whitespace after it;
//   - trim_blocks removes the first newline after a block or comment tag
//     (`+%}` keeps it); lstrip_blocks removes spaces and tabs between the
//     start of a line and a block or comment tag (`{%+` keeps them);
//   - inside tags, `}}` and `%}` end the tag only outside brackets.
// String literals take Python escapes (\n, \t, \', \", \\, \xNN, \uNNNN,
// \UNNNNNNNN, octal); unknown escapes are kept verbatim like Python.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tmpl {

enum class TokenType {
  kText,        // raw template text (already whitespace-processed)
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kVarBegin,    // {{
  kVarEnd,      // }}
  kName,        // identifier or keyword
  kString,      // string literal; `text` holds the unescaped value
  kInt,
  kFloat,
  kOp,          // operator or punctuation; `text` holds it ("//", "(", ...)
  kEnd,         // end of source
};

struct Token {
  TokenType type = TokenType::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;    // 1-based position of the token's first character
  int column = 1;  // 1-based, in bytes
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Tokenizes `source`; the last token is kEnd. Throws TemplateError
// (src/template/error.h) with the position of an unclosed tag or comment,
// an unterminated string or an unexpected character.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

}  // namespace tessera::tmpl
