// TemplateError: how the template library reports errors internally.
// Parsing and rendering throw it and the public entry points
// (ChatTemplate::parse / render, chat_template.h) catch it and return a
// Status; nothing throws out of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "tessera/status.h"

namespace tessera::tmpl {

// Limits that keep hostile templates and inputs bounded.
inline constexpr int kMaxNesting = 128;            // nested tags / expression depth in the parser
inline constexpr int kMaxValueDepth = 128;         // nested lists/dicts (input JSON and built values)
inline constexpr int kMaxCallDepth = 64;           // macro recursion
inline constexpr size_t kMaxOutputBytes = 16u << 20;  // rendered text and any built string
inline constexpr size_t kMaxItems = 1u << 20;       // elements of one built list (range(), repetition)
inline constexpr int64_t kMaxSteps = 10'000'000;   // evaluation steps per render (a loop iteration costs 8)
inline constexpr int64_t kMaxLoopIterations = 1'000'000;  // for-loop iterations per render, all loops together
inline constexpr int kMaxEvalDepth = 2048;         // nested statement/expression evaluation (keeps the C++ stack bounded)
inline constexpr int64_t kDefaultRenderTimeMs = 1000;  // wall-clock time per render

struct TemplateError {
  StatusCode code = StatusCode::kInvalidArgument;
  std::string message;
  bool has_position = false;
  int line = 0;
  int column = 0;
  bool raised = false;  // from raise_exception(): the message is reported verbatim
};

// Throws a kInvalidArgument TemplateError with `message`.
[[noreturn]] inline void fail(std::string message) {
  throw TemplateError{StatusCode::kInvalidArgument, std::move(message)};
}

// Throws a kInvalidArgument TemplateError at a known position.
[[noreturn]] inline void fail_at(int line, int column, std::string message) {
  throw TemplateError{StatusCode::kInvalidArgument, std::move(message), true, line, column};
}

// Throws a kResourceExhausted TemplateError (a limit above was hit).
[[noreturn]] inline void fail_limit(std::string message) {
  throw TemplateError{StatusCode::kResourceExhausted, std::move(message)};
}

}  // namespace tessera::tmpl
