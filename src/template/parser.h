// Parser: template tokens (lexer.h) -> AST (ast.h).
//
// Supported statements (Jinja2 template designer docs, "List of Control
// Structures"): if/elif/else, for (tuple targets, `if` filter, else,
// loop.* variables), set (names, tuples, `ns.attr`, block set), macro,
// break/continue (jinja2.ext.loopcontrols, enabled by transformers) and
// generation (transformers' no-op marker block). Other tags (call, filter,
// include, import, extends, block, raw, with, ...) are rejected with an
// error naming them.
//
// Expressions use Jinja2's precedence: ternary < or < and < not < comparisons
// (== != < <= > >= in, not in) < + - < ~ < * / // % < ** < unary - + <
// postfix (.attr, [item], [a:b:c], call) < filters (|f) and tests (is t).
#pragma once

#include <memory>
#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace tessera::tmpl {

// Parses the token stream. Throws TemplateError (src/template/error.h) with
// the line and column of malformed or unsupported syntax, and when tags or
// expressions nest deeper than kMaxNesting.
std::unique_ptr<Program> parse_tokens(std::vector<Token> tokens);

}  // namespace tessera::tmpl
