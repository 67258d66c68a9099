// AST of a parsed chat template (src/template/parser.h builds it,
// src/template/interpreter.h walks it). Nodes own their children; a parsed
// template is immutable and may be rendered from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/value.h"

namespace tessera::tmpl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// An expression (Jinja2 designer docs, "Expressions").
struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // [children...]  (tuples too)
    kDict,       // {children[2i]: children[2i+1]}
    kGetAttr,    // children[0].name
    kGetItem,    // children[0][children[1]]
    kSlice,      // children[0][a:b:c]; children[1..3] may be null
    kCall,       // children[0](children[1..], kwargs)
    kFilter,     // children[0] | name(children[1..], kwargs)
    kTest,       // children[0] is [not] name(children[1..]); negated
    kUnary,      // op children[0]: "-", "+", "not"
    kBinary,     // children[0] op children[1]: + - * / // % ** ~ and or in "not in"
    kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ... (== != < <= > >=)
    kCondition,  // children[1] if children[0] else children[2] (children[2] may be null)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  int column = 0;
  Value value;             // kLiteral
  std::string name;        // kName, kGetAttr, kFilter, kTest; operator for kUnary/kBinary
  std::vector<std::string> ops;  // kCompare
  bool negated = false;    // kTest
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // kCall, kFilter
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

// A statement or piece of output.
struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches: (condition, body)...; else_body
    kFor,       // for targets in expr [if filter]: body; else_body
    kSet,       // set targets = expr, or set targets[0].attribute = expr
    kSetBlock,  // {% set targets[0] %}body{% endset %}
    kMacro,     // {% macro name(params) %}body{% endmacro %}
    kBreak,
    kContinue,
    kBlock,     // a body rendered as is ({% generation %}...{% endgeneration %})
  };
  Kind kind = Kind::kText;
  int line = 0;
  int column = 0;
  std::string text;                   // kText; macro name for kMacro
  ExprPtr expr;                       // kOutput, kFor (iterable), kSet (value)
  ExprPtr filter;                     // kFor: optional `if` filter
  std::vector<std::string> targets;   // kFor / kSet / kSetBlock names
  std::string attribute;              // kSet: `set ns.attribute = ...` when non-empty
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf
  Body body;                          // kFor, kSetBlock, kMacro, kBlock
  Body else_body;                     // kIf, kFor
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro: name, default (may be null)
};

// A whole template: the top-level body.
struct Program {
  Body body;
};

}  // namespace tessera::tmpl
