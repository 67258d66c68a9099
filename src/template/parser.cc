#include "template/parser.h"

#include <string_view>

#include "template/error.h"

namespace tessera::tmpl {
namespace {

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

  // ---- statements ----

  // Parses nodes until a block tag named in `end_tags` (consumed up to and
  // including its name, returned in *found) or the end of the template.
  Body parse_body(const std::vector<std::string_view>& end_tags, std::string* found, const Token* opener) {
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

  NodePtr parse_statement() {
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

  NodePtr parse_if() {
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

  std::vector<std::string> parse_targets(const char* what) {
    std::vector<std::string> targets;
    const bool paren = skip_op("(");
    do {
      targets.push_back(expect_name(what));
    } while (skip_op(","));
    if (paren) expect_op(")");
    return targets;
  }

  NodePtr parse_for() {
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

  NodePtr parse_set() {
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

  NodePtr parse_macro() {
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

  // ---- expressions ----

  // An expression, or a tuple of them when separated by commas.
  ExprPtr parse_tuple(bool allow_empty_end, bool with_condexpr = true) {
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

  ExprPtr parse_expression() {
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

  ExprPtr binary(const Token& at, const std::string& op, ExprPtr l, ExprPtr r) {
    auto e = make(Expr::Kind::kBinary, at);
    e->name = op;
    e->children.push_back(std::move(l));
    e->children.push_back(std::move(r));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& at = take();
      e = binary(at, "or", std::move(e), parse_and());
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& at = take();
      e = binary(at, "and", std::move(e), parse_not());
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(this, cur());
      auto e = make(Expr::Kind::kUnary, take());
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
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
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = take();
      e = binary(at, at.text, std::move(e), parse_concat());
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& at = take();
      e = binary(at, "~", std::move(e), parse_math2());
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = take();
      e = binary(at, at.text, std::move(e), parse_pow());
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& at = take();
      e = binary(at, "**", std::move(e), parse_unary(true));
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node) {
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
  void parse_args(Expr* e) {
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

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(Expr::Kind::kCall, cur());
    e->children.push_back(std::move(node));
    parse_args(e.get());
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
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

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

std::unique_ptr<Program> parse_tokens(std::vector<Token> tokens) { return Parser(std::move(tokens)).run(); }

}  // namespace tessera::tmpl
