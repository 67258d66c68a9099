#include "template/interpreter.h"

#include "template/builtins.h"
#include "template/error.h"
#include "template/operators.h"

namespace tessera::tmpl {

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

void Scope::set(const std::string& name, Value value) { vars_[name] = std::move(value); }

Interpreter::Interpreter(const Program& program, const Value& context, std::chrono::milliseconds time_limit)
    : program_(program), time_limit_(time_limit) {
  auto globals = std::make_shared<Scope>(nullptr);
  install_globals(*globals);
  root_ = std::make_shared<Scope>(globals);
  if (context.is_object()) {
    for (const auto& [k, v] : context.as_object().items) root_->set(k, v);
  }
}

Value Interpreter::render() {
  out_.take();
  steps_ = 0;
  loop_iterations_ = 0;
  deadline_ = std::chrono::steady_clock::now() + time_limit_;
  exec_body(program_.body, root_);
  return out_.take();
}

void Interpreter::charge(int64_t n) {
  const int64_t before = steps_;
  steps_ += n;
  if (steps_ > kMaxSteps) {
    fail_limit("template evaluation exceeded the step limit (" + std::to_string(kMaxSteps) + " steps)");
  }
  if ((before >> 4) != (steps_ >> 4) && std::chrono::steady_clock::now() > deadline_) {
    fail_limit("template rendering exceeded the time limit (" + std::to_string(time_limit_.count()) + " ms)");
  }
}

Interpreter::DepthGuard::DepthGuard(Interpreter& in) : in_(in) {
  if (++in_.depth_ > kMaxEvalDepth) {
    --in_.depth_;
    fail_limit("template evaluation nested too deeply (depth " + std::to_string(kMaxEvalDepth) + ")");
  }
}

void Interpreter::emit(const Value& value) {
  const Value converted = value.is_string() ? Value() : value.text();
  const Value& t = value.is_string() ? value : converted;
  if (out_.size() + t.as_string().size() > kMaxOutputBytes) {
    fail_limit("rendered text exceeds the output limit (" + std::to_string(kMaxOutputBytes) + " bytes)");
  }
  out_.append(t);
}

void Interpreter::emit_template(const std::string& text) {
  if (out_.size() + text.size() > kMaxOutputBytes) {
    fail_limit("rendered text exceeds the output limit (" + std::to_string(kMaxOutputBytes) + " bytes)");
  }
  out_.append(text, /*caller=*/false);
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const NodePtr& n : body) {
    const Flow f = exec(*n, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Node& node, const std::shared_ptr<Scope>& scope) {
  charge();
  try {
    DepthGuard guard(*this);
    switch (node.kind) {
      case Node::Kind::kText: emit_template(node.text); return Flow::kNormal;
      case Node::Kind::kOutput: emit(eval(*node.expr, scope)); return Flow::kNormal;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : node.branches) {
          if (eval(*cond, scope).truthy()) return exec_body(body, scope);
        }
        return exec_body(node.else_body, scope);
      case Node::Kind::kFor: return exec_for(node, scope);
      case Node::Kind::kSet: exec_set(node, scope); return Flow::kNormal;
      case Node::Kind::kSetBlock: {
        TextBuilder saved = std::move(out_);
        out_ = TextBuilder();
        Flow f = Flow::kNormal;
        try {
          f = exec_body(node.body, scope);
        } catch (...) {
          out_ = std::move(saved);
          throw;
        }
        Value captured = out_.take();
        out_ = std::move(saved);
        scope->set(node.targets[0], std::move(captured));
        return f;
      }
      case Node::Kind::kMacro: {
        auto fn = std::make_shared<Function>();
        fn->name = node.text;
        fn->macro = &node;
        fn->closure = scope;
        if (macro_scopes_.empty() || macro_scopes_.back() != scope) macro_scopes_.push_back(scope);
        scope->set(node.text, Value(std::move(fn)));
        return Flow::kNormal;
      }
      case Node::Kind::kBreak: return Flow::kBreak;
      case Node::Kind::kContinue: return Flow::kContinue;
      case Node::Kind::kBlock: return exec_body(node.body, scope);
    }
  } catch (TemplateError& err) {
    if (!err.has_position) {
      err.has_position = true;
      err.line = node.line;
      err.column = node.column;
    }
    throw;
  }
  return Flow::kNormal;
}

void Interpreter::assign(const std::vector<std::string>& targets, const Value& value, Scope& scope) {
  if (targets.size() == 1) {
    scope.set(targets[0], value);
    return;
  }
  if (!value.is_array()) {
    const Array items = iterate(value);
    if (items.size() != targets.size()) fail("cannot unpack " + std::to_string(items.size()) + " values into " +
                                             std::to_string(targets.size()) + " variables");
    for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], items[i]);
    return;
  }
  const Array& items = value.as_array();
  if (items.size() != targets.size()) {
    fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) +
         " variables");
  }
  for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], items[i]);
}

Interpreter::Flow Interpreter::exec_for(const Node& node, const std::shared_ptr<Scope>& scope) {
  Array items = iterate(eval(*node.expr, scope));
  charge(static_cast<int64_t>(items.size()) / 16);
  if (node.filter) {
    Array kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>(scope);
      assign(node.targets, item, *probe);
      if (eval(*node.filter, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(node.else_body, scope);
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    charge(8);  // a scope, the loop object and its cycle function
    if (++loop_iterations_ > kMaxLoopIterations) {
      fail_limit("template loops exceeded " + std::to_string(kMaxLoopIterations) + " iterations");
    }
    auto frame = std::make_shared<Scope>(scope);
    Object loop;
    loop.items.reserve(12);
    loop.items.emplace_back("index", Value(i + 1));
    loop.items.emplace_back("index0", Value(i));
    loop.items.emplace_back("revindex", Value(n - i));
    loop.items.emplace_back("revindex0", Value(n - i - 1));
    loop.items.emplace_back("first", Value(i == 0));
    loop.items.emplace_back("last", Value(i == n - 1));
    loop.items.emplace_back("length", Value(n));
    loop.items.emplace_back("depth", Value(1));
    loop.items.emplace_back("depth0", Value(0));
    loop.items.emplace_back("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value(Undefined{"previtem"}));
    loop.items.emplace_back("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value(Undefined{"nextitem"}));
    auto cycle = std::make_shared<Function>();
    cycle->name = "loop.cycle";
    cycle->native = [i](Interpreter&, const CallArgs& args) -> Value {
      if (args.args.empty()) fail("loop.cycle() needs at least one argument");
      return args.args[static_cast<size_t>(i) % args.args.size()];
    };
    loop.items.emplace_back("cycle", Value(std::move(cycle)));
    frame->set("loop", Value(std::move(loop)));
    assign(node.targets, items[static_cast<size_t>(i)], *frame);
    if (exec_body(node.body, frame) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::exec_set(const Node& node, const std::shared_ptr<Scope>& scope) {
  Value value = eval(*node.expr, scope);
  if (node.attribute.empty()) {
    assign(node.targets, value, *scope);
    return;
  }
  const Value* target = scope->lookup(node.targets[0]);
  if (target == nullptr || !target->is_object() || !target->as_object().is_namespace) {
    fail("cannot assign attribute '" + node.attribute + "' on non-namespace object '" + node.targets[0] + "'");
  }
  if (value.holds_namespace()) fail("cannot store a namespace inside a namespace");
  Object& ns = target->mutable_object();
  const int depth = value.depth() + 1;
  if (depth > kMaxValueDepth) fail_limit("lists and dicts nested too deeply");
  ns.set(node.attribute, std::move(value));
  ns.namespace_depth = std::max(ns.namespace_depth, depth);
}

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  charge();
  try {
    DepthGuard guard(*this);
    return eval_impl(e, scope);
  } catch (TemplateError& err) {
    if (!err.has_position) {
      err.has_position = true;
      err.line = e.line;
      err.column = e.column;
    }
    throw;
  }
}

CallArgs Interpreter::eval_args(const Expr& e, const std::shared_ptr<Scope>& scope) {
  CallArgs args;
  for (size_t i = 1; i < e.children.size(); ++i) args.args.push_back(eval(*e.children[i], scope));
  for (const auto& [k, v] : e.kwargs) args.kwargs.emplace_back(k, eval(*v, scope));
  return args;
}

Value Interpreter::eval_impl(const Expr& e, const std::shared_ptr<Scope>& scope) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.value;
    case Expr::Kind::kName: {
      const Value* v = scope->lookup(e.name);
      return v != nullptr ? *v : Value(Undefined{e.name});
    }
    case Expr::Kind::kList: {
      Array a;
      a.reserve(e.children.size());
      for (const ExprPtr& c : e.children) a.push_back(eval(*c, scope));
      return Value(std::move(a));
    }
    case Expr::Kind::kDict: {
      Object o;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        Value key = eval(*e.children[i], scope);
        if (!key.is_string()) fail(std::string("dict keys must be strings, not ") + key.type_name());
        o.caller_keys = o.caller_keys || key.has_caller_text();
        o.set(key.as_string(), eval(*e.children[i + 1], scope));
      }
      return Value(std::move(o));
    }
    case Expr::Kind::kGetAttr: return get_attr(eval(*e.children[0], scope), e.name);
    case Expr::Kind::kGetItem: return get_item(eval(*e.children[0], scope), eval(*e.children[1], scope));
    case Expr::Kind::kSlice: {
      Value obj = eval(*e.children[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        if (e.children[static_cast<size_t>(i) + 1]) parts[i] = eval(*e.children[static_cast<size_t>(i) + 1], scope);
      }
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: return eval_call(e, scope);
    case Expr::Kind::kFilter: {
      Value v = eval(*e.children[0], scope);
      return apply_filter(*this, e.name, v, eval_args(e, scope));
    }
    case Expr::Kind::kTest: {
      Value v = eval(*e.children[0], scope);
      return Value(apply_test(*this, e.name, v, eval_args(e, scope)) != e.negated);
    }
    case Expr::Kind::kUnary: {
      Value v = eval(*e.children[0], scope);
      if (e.name == "not") return Value(!v.truthy());
      require_defined(v);
      if (!v.is_number()) fail(std::string("bad operand type for unary ") + e.name + ": '" + v.type_name() + "'");
      if (e.name == "+") return v.is_bool() ? Value(static_cast<int64_t>(v.as_bool())) : v;
      if (v.is_float()) return Value(-v.as_float());
      const int64_t x = v.is_bool() ? static_cast<int64_t>(v.as_bool()) : v.as_int();
      if (x == INT64_MIN) fail("integer overflow");
      return Value(-x);
    }
    case Expr::Kind::kBinary: {
      Value a = eval(*e.children[0], scope);
      if (e.name == "and") return a.truthy() ? eval(*e.children[1], scope) : a;
      if (e.name == "or") return a.truthy() ? a : eval(*e.children[1], scope);
      return binary_op(e.name, a, eval(*e.children[1], scope));
    }
    case Expr::Kind::kCompare: {
      Value left = eval(*e.children[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.children[i + 1], scope);
        if (!compare_op(e.ops[i], left, right)) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kCondition:
      if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
      return e.children[2] ? eval(*e.children[2], scope) : Value(Undefined{});
  }
  return Value();
}

Value Interpreter::eval_call(const Expr& e, const std::shared_ptr<Scope>& scope) {
  const Expr& callee = *e.children[0];
  if (callee.kind == Expr::Kind::kGetAttr) {
    Value obj = eval(*callee.children[0], scope);
    if (obj.is_object()) {
      const Value* member = obj.as_object().find(callee.name);
      if (member != nullptr && member->is_function()) return call(*member, eval_args(e, scope));
    }
    if (obj.is_undefined()) {
      fail("cannot call '" + callee.name + "' on undefined value" +
           (obj.undefined_hint().empty() ? "" : " '" + obj.undefined_hint() + "'"));
    }
    Value result;
    if (call_method(*this, obj, callee.name, eval_args(e, scope), &result)) return result;
    fail(std::string("'") + obj.type_name() + "' object has no method '" + callee.name + "'");
  }
  Value fn = eval(callee, scope);
  if (!fn.is_function()) {
    if (fn.is_undefined()) {
      fail("'" + (fn.undefined_hint().empty() ? callee.name : fn.undefined_hint()) +
           "' is undefined and cannot be called");
    }
    fail(std::string("'") + fn.type_name() + "' object is not callable");
  }
  return call(fn, eval_args(e, scope));
}

Value Interpreter::call(const Value& fn, const CallArgs& args) {
  const Function& f = *fn.as_function();
  if (f.macro != nullptr) return call_macro(f, args);
  return f.native(*this, args);
}

Value Interpreter::call_macro(const Function& fn, const CallArgs& args) {
  const Node& m = *fn.macro;
  if (call_depth_ >= kMaxCallDepth) fail_limit("macro calls nested too deeply");
  if (args.args.size() > m.params.size()) fail("macro '" + m.text + "' takes " + std::to_string(m.params.size()) +
                                               " arguments, got " + std::to_string(args.args.size()));
  std::shared_ptr<Scope> closure = fn.closure.lock();
  if (!closure) fail("macro '" + m.text + "' called after its scope ended");
  auto frame = std::make_shared<Scope>(std::move(closure));
  for (size_t i = 0; i < m.params.size(); ++i) {
    const auto& [name, def] = m.params[i];
    const Value* kw = args.kwarg(name);
    if (i < args.args.size()) {
      if (kw != nullptr) fail("macro '" + m.text + "' got multiple values for argument '" + name + "'");
      frame->set(name, args.args[i]);
    } else if (kw != nullptr) {
      frame->set(name, *kw);
    } else {
      frame->set(name, def ? eval(*def, frame) : Value(Undefined{name}));
    }
  }
  for (const auto& [k, v] : args.kwargs) {
    bool known = false;
    for (const auto& p : m.params) known = known || p.first == k;
    if (!known) fail("macro '" + m.text + "' got an unexpected keyword argument '" + k + "'");
  }
  TextBuilder saved = std::move(out_);
  out_ = TextBuilder();
  ++call_depth_;
  try {
    exec_body(m.body, frame);
  } catch (...) {
    --call_depth_;
    out_ = std::move(saved);
    throw;
  }
  --call_depth_;
  Value result = out_.take();
  out_ = std::move(saved);
  return result;
}

}  // namespace tessera::tmpl
