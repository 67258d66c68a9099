#include "template/parser.h"

#include "template/parser_impl.h"

namespace tessera::tmpl {


// Parses nodes until a block tag named in `end_tags` (consumed up to and
// including its name, returned in *found) or the end of the template.
Body Parser::parse_body(const std::vector<std::string_view>& end_tags, std::string* found, const Token* opener) {
  Body body;
  while (true) {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::kEnd:
        if (!end_tags.empty()) {
          fail_at(opener->line, opener->column,
                  "unclosed '" + opener->text + "' tag (expected '" + std::string(end_tags.back()) + "')");
        }
        return body;
      case TokenType::kText: {
        auto n = make_node(Node::Kind::kText, t);
        n->text = take().text;
        body.push_back(std::move(n));
        break;
      }
      case TokenType::kVarBegin: {
        auto n = make_node(Node::Kind::kOutput, t);
        take();
        n->expr = parse_tuple(true);
        if (cur().type != TokenType::kVarEnd) fail_here("expected '}}'");
        take();
        body.push_back(std::move(n));
        break;
      }
      case TokenType::kBlockBegin: {
        const Token& name = look();
        if (name.type != TokenType::kName) {
          take();
          fail_here("expected a tag name after '{%'");
        }
        for (std::string_view end : end_tags) {
          if (name.text == end) {
            take();
            take();
            *found = name.text;
            return body;
          }
        }
        take();
        body.push_back(parse_statement());
        break;
      }
      default: fail_here("unexpected token");
    }
  }
}

NodePtr Parser::parse_statement() {
  const Token& tag = cur();
  DepthGuard guard(this, tag);
  const std::string name = tag.text;
  if (name == "if") return parse_if();
  if (name == "for") return parse_for();
  if (name == "set") return parse_set();
  if (name == "macro") return parse_macro();
  if (name == "generation") {
    auto n = make_node(Node::Kind::kBlock, tag);
    Token opener = take();
    expect_block_end("generation");
    std::string found;
    n->body = parse_body({"endgeneration"}, &found, &opener);
    expect_block_end("endgeneration");
    return n;
  }
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) fail_here("'" + name + "' outside of a for loop");
    auto n = make_node(name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, tag);
    take();
    expect_block_end(name.c_str());
    return n;
  }
  static const char* const kUnsupported[] = {"call",   "filter",   "include", "import", "from", "extends",
                                             "block",  "raw",      "with",    "autoescape", "do", "trans",
                                             "pluralize", "print"};
  for (const char* u : kUnsupported) {
    if (name == u) fail_at(tag.line, tag.column, "unsupported tag '" + name + "'");
  }
  if (name.rfind("end", 0) == 0 || name == "else" || name == "elif") {
    fail_at(tag.line, tag.column, "unexpected '" + name + "' tag (no matching opening tag)");
  }
  fail_at(tag.line, tag.column, "unknown tag '" + name + "'");
}

NodePtr Parser::parse_if() {
  Token opener = take();
  auto n = make_node(Node::Kind::kIf, opener);
  ExprPtr cond = parse_tuple(false);
  expect_block_end("if");
  while (true) {
    std::string found;
    Body body = parse_body({"elif", "else", "endif"}, &found, &opener);
    n->branches.emplace_back(std::move(cond), std::move(body));
    if (found == "elif") {
      cond = parse_tuple(false);
      expect_block_end("elif");
      continue;
    }
    if (found == "else") {
      expect_block_end("else");
      n->else_body = parse_body({"endif"}, &found, &opener);
    }
    expect_block_end("endif");
    return n;
  }
}

std::vector<std::string> Parser::parse_targets(const char* what) {
  std::vector<std::string> targets;
  const bool paren = skip_op("(");
  do {
    targets.push_back(expect_name(what));
  } while (skip_op(","));
  if (paren) expect_op(")");
  return targets;
}

NodePtr Parser::parse_for() {
  Token opener = take();
  auto n = make_node(Node::Kind::kFor, opener);
  n->targets = parse_targets("a loop variable name");
  if (!skip_name("in")) fail_here("expected 'in' in for loop");
  n->expr = parse_tuple(false, /*with_condexpr=*/false);
  if (skip_name("if")) n->filter = parse_expression();
  if (is_name("recursive")) fail_here("unsupported 'recursive' for loop");
  expect_block_end("for");
  ++loop_depth_;
  std::string found;
  n->body = parse_body({"else", "endfor"}, &found, &opener);
  --loop_depth_;
  if (found == "else") {
    expect_block_end("else");
    n->else_body = parse_body({"endfor"}, &found, &opener);
  }
  expect_block_end("endfor");
  return n;
}

NodePtr Parser::parse_set() {
  Token opener = take();
  auto n = make_node(Node::Kind::kSet, opener);
  std::string first = expect_name("a variable name");
  if (skip_op(".")) {
    n->targets.push_back(std::move(first));
    n->attribute = expect_name("an attribute name");
  } else {
    n->targets.push_back(std::move(first));
    while (skip_op(",")) n->targets.push_back(expect_name("a variable name"));
  }
  if (skip_op("=")) {
    n->expr = parse_tuple(false);
    expect_block_end("set");
    return n;
  }
  if (n->targets.size() != 1 || !n->attribute.empty()) fail_here("expected '=' in set");
  if (is_op("|")) fail_here("unsupported filtered block set");
  expect_block_end("set");
  n->kind = Node::Kind::kSetBlock;
  std::string found;
  n->body = parse_body({"endset"}, &found, &opener);
  expect_block_end("endset");
  return n;
}

NodePtr Parser::parse_macro() {
  Token opener = take();
  auto n = make_node(Node::Kind::kMacro, opener);
  n->text = expect_name("a macro name");
  expect_op("(");
  while (!is_op(")")) {
    if (!n->params.empty()) expect_op(",");
    if (is_op(")")) break;
    std::string param = expect_name("a parameter name");
    ExprPtr def;
    if (skip_op("=")) def = parse_expression();
    n->params.emplace_back(std::move(param), std::move(def));
  }
  expect_op(")");
  expect_block_end("macro");
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  std::string found;
  n->body = parse_body({"endmacro"}, &found, &opener);
  loop_depth_ = saved_loops;
  if (cur().type == TokenType::kName) take();  // {% endmacro name %}
  expect_block_end("endmacro");
  return n;
}


std::unique_ptr<Program> parse_tokens(std::vector<Token> tokens) { return Parser(std::move(tokens)).run(); }

}  // namespace tessera::tmpl
