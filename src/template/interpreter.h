// Interpreter: renders a parsed template (ast.h) with a context.
//
// Scoping follows Jinja2: the context and top-level `set`s live in the root
// scope; each for-loop iteration and macro call gets a child scope, so
// `set` inside a loop does not leak out (use namespace()); `if` bodies do
// not open a scope. Globals (range, namespace, dict, raise_exception,
// strftime_now) sit below the root scope (builtins.h).
// Limits (error.h): output size, evaluation steps, loop iterations, macro
// recursion, evaluation depth, and the wall-clock time given to the
// constructor; each throws kResourceExhausted.
//
// Output keeps provenance (value.h): the template's text and literals are
// template text, bytes of caller values stay caller text.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "template/ast.h"
#include "template/error.h"
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
  // entries become the root variables. Rendering fails once it has run for
  // `time_limit` (checked every 16 evaluation steps).
  Interpreter(const Program& program, const Value& context,
              std::chrono::milliseconds time_limit = std::chrono::milliseconds(kDefaultRenderTimeMs));

  // Renders the template: a string Value whose caller ranges mark the bytes
  // that came from caller values. Throws TemplateError on errors.
  Value render();

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
  void emit(const Value& text);
  void emit_template(const std::string& text);
  // Counts one level of exec/eval recursion (RAII); throws past kMaxEvalDepth.
  struct DepthGuard {
    explicit DepthGuard(Interpreter& in);
    ~DepthGuard() { --in_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    Interpreter& in_;
  };

  const Program& program_;
  std::shared_ptr<Scope> root_;
  // Scopes that define macros; owned here so that macros can refer to them
  // weakly (a scope holding a macro that held the scope would leak).
  std::vector<std::shared_ptr<Scope>> macro_scopes_;
  TextBuilder out_;
  int64_t steps_ = 0;
  int64_t loop_iterations_ = 0;
  int call_depth_ = 0;
  int depth_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds time_limit_;
};

}  // namespace tessera::tmpl
