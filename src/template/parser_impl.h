// Parser internals shared by parser.cc (statements) and parser_expr.cc
// (expressions). Not part of the library's interface; see parser.h.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/error.h"
#include "template/lexer.h"

namespace tessera::tmpl {

// Recursive-descent parser over the token vector; throws TemplateError.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  std::unique_ptr<Program> run() {
    auto program = std::make_unique<Program>();
    std::string found;
    program->body = parse_body({}, &found, nullptr);
    return program;
  }

 private:
  // Counts nesting; throws past kMaxNesting.
  struct DepthGuard {
    DepthGuard(Parser* p, const Token& t) : p_(p) {
      if (++p_->depth_ > kMaxNesting) fail_at(t.line, t.column, "template nested too deeply");
    }
    ~DepthGuard() { --p_->depth_; }
    Parser* p_;
  };

  const Token& cur() const { return tokens_[pos_]; }
  const Token& look(size_t k = 1) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  const Token& take() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::kOp && cur().text == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::kName && cur().text == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    take();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    take();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.type) {
      case TokenType::kEnd: return "end of template";
      case TokenType::kBlockEnd: return "'%}'";
      case TokenType::kVarEnd: return "'}}'";
      case TokenType::kBlockBegin: return "'{%'";
      case TokenType::kVarBegin: return "'{{'";
      case TokenType::kText: return "template text";
      case TokenType::kString: return "string literal";
      default: return "'" + t.text + "'";
    }
  }
  [[noreturn]] void fail_here(const std::string& message) const {
    fail_at(cur().line, cur().column, message + " (found " + describe(cur()) + ")");
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail_here("expected '" + std::string(op) + "'");
  }
  std::string expect_name(const char* what) {
    if (cur().type != TokenType::kName) fail_here(std::string("expected ") + what);
    return take().text;
  }
  void expect_block_end(const char* tag) {
    if (cur().type != TokenType::kBlockEnd) fail_here(std::string("expected '%}' to end '") + tag + "' tag");
    take();
  }

  static ExprPtr make(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  static NodePtr make_node(Node::Kind kind, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    return n;
  }

  // ---- statements (parser.cc) ----
  Body parse_body(const std::vector<std::string_view>& end_tags, std::string* found, const Token* opener);
  NodePtr parse_statement();
  NodePtr parse_if();
  std::vector<std::string> parse_targets(const char* what);
  NodePtr parse_for();
  NodePtr parse_set();
  NodePtr parse_macro();

  // ---- expressions (parser_expr.cc) ----
  ExprPtr parse_tuple(bool allow_empty_end, bool with_condexpr = true);
  ExprPtr parse_expression();
  ExprPtr binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  void parse_args(Expr* e);
  ExprPtr parse_call(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace tessera::tmpl
