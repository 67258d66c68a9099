// ChatTemplate: renders LLM chat templates, the Jinja2 templates stored as
// `tokenizer.chat_template` in GGUF files and `chat_template` in Hugging
// Face tokenizer_config.json, into the prompt text.
//
// tessera carries its own interpreter (src/template/) for the subset of
// Jinja2 (https://jinja.palletsprojects.com/en/stable/templates/) that
// published chat templates use, rendering like transformers'
// apply_chat_template: an ImmutableSandboxedEnvironment with
// trim_blocks=True, lstrip_blocks=True, the loopcontrols extension
// (break/continue), the globals raise_exception(msg) and strftime_now(fmt),
// and transformers' tojson (json.dumps: key order kept, ensure_ascii=False,
// no HTML escaping). See builtins.h for the filters, tests and methods, and
// parser.h for the statements.
//
// Differences from Jinja2 worth knowing:
//   - attribute/item access on an undefined value gives undefined (Jinja2
//     raises UndefinedError); other uses of undefined follow Jinja2's
//     default Undefined (renders "", falsy, iterates as empty, arithmetic
//     on it is an error);
//   - string case mapping (upper, lower, title, capitalize) is ASCII-only;
//   - dict keys are strings; autoescaping does not exist (like transformers).
// Unsupported constructs (call blocks, includes/imports, recursive loops,
// filter blocks, *args/**kwargs, ...) are reported by parse() naming them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/status.h"

namespace tessera {

namespace tmpl {
struct Program;
}

// Whitespace options of the Jinja2 environment. The defaults are those of
// transformers (Jinja2's own defaults are both false).
struct ChatTemplateOptions {
  bool trim_blocks = true;    // drop the first newline after a block/comment tag
  bool lstrip_blocks = true;  // drop spaces/tabs before a block/comment tag at line start
  // Wall-clock time one render() may take before it fails with kResourceExhausted.
  int64_t render_time_limit_ms = 1000;
};

// Where a stretch of rendered text came from.
enum class SpanOrigin : uint8_t {
  kTemplate,  // the template's own text and string literals, and template-trusted variables (bos_token, ...)
  kCaller,    // caller values (message content, roles, tools, ...), even after filters and string methods
};

// Bytes [begin, end) of RenderedText::text and their origin.
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
  SpanOrigin origin = SpanOrigin::kTemplate;
};

// A rendered template with the origin of every byte: `spans` cover `text`
// in order, without gaps, and neighbouring spans differ in origin (an empty
// text has no spans).
struct RenderedText {
  std::string text;
  std::vector<TextSpan> spans;
};

// A parsed template. Immutable and cheap to copy (the parsed form is
// shared); render() may be called from several threads at once.
class ChatTemplate {
 public:
  // Parses the template source. kInvalidArgument naming the construct and
  // its line/column ("chat template: line 3, column 8: unknown tag 'foo'")
  // when it is malformed or uses unsupported syntax.
  static Result<ChatTemplate> parse(std::string_view source, const ChatTemplateOptions& options = {});

  // Renders with `context` (a JSON object; its keys become the template's
  // variables; null means no variables). Chat templates expect `messages`
  // (array of {role, content}, content a string or an array of
  // {type: "text", text}), `add_generation_prompt`, `bos_token`,
  // `eos_token`, and optionally `tools`, `date_string`, ...; absent
  // variables are undefined. Errors:
  //   - raise_exception(msg) in the template: kInvalidArgument whose message
  //     is exactly `msg`;
  //   - runtime errors (type errors, calling undefined, unknown filter):
  //     kInvalidArgument "chat template: line L, column C: ...";
  //   - limits (16 MiB output, macro recursion 64,
  //     value nesting 128, lists of 1M items, 10M evaluation steps): kResourceExhausted.
  // Nothing throws. Use the ordered_json overload to keep the caller's key
  // order in dicts rendered with tojson (nlohmann::json sorts keys).
  //   - the time limit (ChatTemplateOptions::render_time_limit_ms), 1M loop
  //     iterations in all, nesting deeper than 2048 evaluation levels:
  //     kResourceExhausted naming the limit.
  Result<std::string> render(const nlohmann::json& context) const;
  Result<std::string> render(const nlohmann::ordered_json& context) const;

  // Renders with the variables of `caller_context` (untrusted: messages,
  // tools, ...) and `template_context` (trusted: add_generation_prompt,
  // bos_token, eos_token, ...; its keys win over the caller's), both JSON
  // objects or null, and reports which bytes came from caller values
  // (value.h, "Provenance"): a caller string keeps its origin through
  // concatenation, slicing, strip, replace, join, format, tojson and case
  // mapping; other operations that build a string from caller text make
  // the whole result caller text. Errors as render().
  Result<RenderedText> render_tagged(const nlohmann::ordered_json& caller_context,
                                     const nlohmann::ordered_json& template_context) const;

 private:
  ChatTemplate(std::shared_ptr<const tmpl::Program> program, int64_t time_limit_ms)
      : program_(std::move(program)), time_limit_ms_(time_limit_ms) {}

  std::shared_ptr<const tmpl::Program> program_;
  int64_t time_limit_ms_ = 1000;
};

// Renders `messages` with the usual variables: messages,
// add_generation_prompt, bos_token, eos_token. Errors as render().
Result<std::string> apply_chat_template(const ChatTemplate& t, const nlohmann::json& messages,
                                        bool add_generation_prompt, const std::string& bos_token,
                                        const std::string& eos_token);

}  // namespace tessera
