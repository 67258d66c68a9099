// Expression parsing (Jinja2 precedence; see parser.h).
#include "template/parser_impl.h"

namespace tessera::tmpl {


// An expression, or a tuple of them when separated by commas.
ExprPtr Parser::parse_tuple(bool allow_empty_end, bool with_condexpr) {
  const Token& at = cur();
  (void)allow_empty_end;
  ExprPtr first = with_condexpr ? parse_expression() : parse_or();
  if (!is_op(",")) return first;
  auto tuple = make(Expr::Kind::kList, at);
  tuple->children.push_back(std::move(first));
  while (skip_op(",")) {
    if (cur().type == TokenType::kVarEnd || cur().type == TokenType::kBlockEnd || is_op(")")) break;
    tuple->children.push_back(with_condexpr ? parse_expression() : parse_or());
  }
  return tuple;
}

ExprPtr Parser::parse_expression() {
  DepthGuard guard(this, cur());
  ExprPtr expr = parse_or();
  while (is_name("if")) {
    const Token& at = take();
    auto cond = make(Expr::Kind::kCondition, at);
    cond->children.push_back(parse_or());
    cond->children.push_back(std::move(expr));
    cond->children.push_back(skip_name("else") ? parse_expression() : nullptr);
    expr = std::move(cond);
  }
  return expr;
}

ExprPtr Parser::binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r) {
  auto e = make(Expr::Kind::kBinary, at);
  e->name = op;
  e->children.push_back(std::move(l));
  e->children.push_back(std::move(r));
  return e;
}

ExprPtr Parser::parse_or() {
  ExprPtr e = parse_and();
  while (is_name("or")) {
    const Token& at = take();
    e = binary(at, "or", std::move(e), parse_and());
  }
  return e;
}
ExprPtr Parser::parse_and() {
  ExprPtr e = parse_not();
  while (is_name("and")) {
    const Token& at = take();
    e = binary(at, "and", std::move(e), parse_not());
  }
  return e;
}
ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(this, cur());
    auto e = make(Expr::Kind::kUnary, take());
    e->name = "not";
    e->children.push_back(parse_not());
    return e;
  }
  return parse_compare();
}
ExprPtr Parser::parse_compare() {
  const Token& at = cur();
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == TokenType::kOp &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
         cur().text == ">" || cur().text == ">=")) {
      op = take().text;
    } else if (is_name("in")) {
      take();
      op = "in";
    } else if (is_name("not") && look().type == TokenType::kName && look().text == "in") {
      take();
      take();
      op = "not in";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(Expr::Kind::kCompare, at);
      cmp->children.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->children.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}
ExprPtr Parser::parse_math1() {
  ExprPtr e = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& at = take();
    e = binary(at, at.text, std::move(e), parse_concat());
  }
  return e;
}
ExprPtr Parser::parse_concat() {
  ExprPtr e = parse_math2();
  while (is_op("~")) {
    const Token& at = take();
    e = binary(at, "~", std::move(e), parse_math2());
  }
  return e;
}
ExprPtr Parser::parse_math2() {
  ExprPtr e = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& at = take();
    e = binary(at, at.text, std::move(e), parse_pow());
  }
  return e;
}
ExprPtr Parser::parse_pow() {
  ExprPtr e = parse_unary(true);
  while (is_op("**")) {
    const Token& at = take();
    e = binary(at, "**", std::move(e), parse_unary(true));
  }
  return e;
}
ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(this, cur());
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const Token& at = take();
    node = make(Expr::Kind::kUnary, at);
    node->name = at.text;
    node->children.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  switch (t.type) {
    case TokenType::kName: {
      take();
      auto e = make(Expr::Kind::kLiteral, t);
      if (t.text == "true" || t.text == "True") {
        e->value = Value(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value(None{});
      } else {
        e->kind = Expr::Kind::kName;
        e->name = t.text;
      }
      return e;
    }
    case TokenType::kString: {
      auto e = make(Expr::Kind::kLiteral, t);
      std::string s;
      while (cur().type == TokenType::kString) s += take().text;
      e->value = Value(std::move(s));
      return e;
    }
    case TokenType::kInt: {
      auto e = make(Expr::Kind::kLiteral, take());
      e->value = Value(t.int_value);
      return e;
    }
    case TokenType::kFloat: {
      auto e = make(Expr::Kind::kLiteral, take());
      e->value = Value(t.float_value);
      return e;
    }
    case TokenType::kOp:
      if (t.text == "(") {
        take();
        if (skip_op(")")) return make(Expr::Kind::kList, t);
        ExprPtr inner = parse_tuple(false);
        expect_op(")");
        return inner;
      }
      if (t.text == "[") {
        auto e = make(Expr::Kind::kList, take());
        while (!is_op("]")) {
          if (!e->children.empty()) expect_op(",");
          if (is_op("]")) break;
          e->children.push_back(parse_expression());
        }
        take();
        return e;
      }
      if (t.text == "{") {
        auto e = make(Expr::Kind::kDict, take());
        while (!is_op("}")) {
          if (!e->children.empty()) expect_op(",");
          if (is_op("}")) break;
          e->children.push_back(parse_expression());
          expect_op(":");
          e->children.push_back(parse_expression());
        }
        take();
        return e;
      }
      break;
    default: break;
  }
  fail_here("expected an expression");
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".")) {
      const Token& at = take();
      if (cur().type == TokenType::kInt) {
        auto e = make(Expr::Kind::kGetItem, at);
        auto idx = make(Expr::Kind::kLiteral, cur());
        idx->value = Value(take().int_value);
        e->children.push_back(std::move(node));
        e->children.push_back(std::move(idx));
        node = std::move(e);
        continue;
      }
      auto e = make(Expr::Kind::kGetAttr, at);
      e->name = expect_name("an attribute name after '.'");
      e->children.push_back(std::move(node));
      node = std::move(e);
    } else if (is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& at = take();  // [
  ExprPtr parts[3];
  int colons = 0;
  for (int i = 0; i < 3; ++i) {
    if (!is_op(":") && !is_op("]")) parts[i] = (i == 0 ? parse_tuple(false) : parse_expression());
    if (i < 2 && skip_op(":")) {
      ++colons;
      continue;
    }
    break;
  }
  expect_op("]");
  if (colons == 0) {
    if (!parts[0]) fail_at(at.line, at.column, "empty subscript");
    auto e = make(Expr::Kind::kGetItem, at);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(parts[0]));
    return e;
  }
  auto e = make(Expr::Kind::kSlice, at);
  e->children.push_back(std::move(node));
  for (auto& p : parts) e->children.push_back(std::move(p));
  return e;
}

// Parses "(args)" into e->children (after index 0) and e->kwargs.
void Parser::parse_args(Expr* e) {
  expect_op("(");
  while (!is_op(")")) {
    if (e->children.size() > 1 || !e->kwargs.empty()) expect_op(",");
    if (is_op(")")) break;
    if (is_op("*") || is_op("**")) fail_here("unsupported *args/**kwargs in call");
    if (cur().type == TokenType::kName && look().type == TokenType::kOp && look().text == "=") {
      std::string key = take().text;
      take();
      e->kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!e->kwargs.empty()) fail_here("positional argument after keyword argument");
      e->children.push_back(parse_expression());
    }
  }
  take();
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = make(Expr::Kind::kCall, cur());
  e->children.push_back(std::move(node));
  parse_args(e.get());
  return e;
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      const Token& at = take();
      auto e = make(Expr::Kind::kFilter, at);
      e->name = expect_name("a filter name after '|'");
      e->children.push_back(std::move(node));
      if (is_op("(")) parse_args(e.get());
      node = std::move(e);
    } else if (is_name("is")) {
      const Token& at = take();
      auto e = make(Expr::Kind::kTest, at);
      e->negated = skip_name("not");
      e->name = expect_name("a test name after 'is'");
      e->children.push_back(std::move(node));
      if (is_op("(")) {
        parse_args(e.get());
      } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
                  cur().type == TokenType::kInt || cur().type == TokenType::kFloat || is_op("[") ||
                  is_op("{")) &&
                 !(is_name("else") || is_name("or") || is_name("and") || is_name("if") || is_name("in") ||
                   is_name("not") || is_name("is"))) {
        e->children.push_back(parse_postfix(parse_primary()));
      }
      node = std::move(e);
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

}  // namespace tessera::tmpl
