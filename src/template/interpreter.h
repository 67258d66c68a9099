// Interpreter: renders a parsed template (ast.h) with a context.
//
// Scoping follows Jinja2: the context and top-level `set`s live in the root
// scope; each for-loop iteration and macro call gets a child scope, so
// `set` inside a loop does not leak out (use namespace()); `if` bodies do
// not open a scope. Globals (range, namespace, dict, raise_exception,
// strftime_now) sit below the root scope (builtins.h).
// Limits (error.h): output size, evaluation steps, macro recursion.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/value.h"

namespace tessera::tmpl {

// One frame of variables; looks up through its parents.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  // The variable `name` in this frame or an enclosing one, or nullptr.
  const Value* lookup(std::string_view name) const;
  // Defines or replaces `name` in this frame.
  void set(const std::string& name, Value value);

 private:
  std::shared_ptr<Scope> parent_;
  std::map<std::string, Value, std::less<>> vars_;
};

class Interpreter {
 public:
  // `program` must outlive the interpreter. `context` is a dict Value whose
  // entries become the root variables.
  Interpreter(const Program& program, const Value& context);

  // Renders the template. Throws TemplateError on errors.
  std::string render();

  // Calls a function Value (builtin or macro). Throws TemplateError.
  Value call(const Value& fn, const CallArgs& args);
  // Counts `n` evaluation steps; throws kResourceExhausted past kMaxSteps.
  void charge(int64_t n = 1);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec(const Node& node, const std::shared_ptr<Scope>& scope);
  Flow exec_for(const Node& node, const std::shared_ptr<Scope>& scope);
  void exec_set(const Node& node, const std::shared_ptr<Scope>& scope);
  void assign(const std::vector<std::string>& targets, const Value& value, Scope& scope);
  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_impl(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_call(const Expr& e, const std::shared_ptr<Scope>& scope);
  CallArgs eval_args(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value call_macro(const Function& fn, const CallArgs& args);
  void emit(const std::string& text);

  const Program& program_;
  std::shared_ptr<Scope> root_;
  // Scopes that define macros; owned here so that macros can refer to them
  // weakly (a scope holding a macro that held the scope would leak).
  std::vector<std::shared_ptr<Scope>> macro_scopes_;
  std::string out_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
};

}  // namespace tessera::tmpl
