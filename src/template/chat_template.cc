#include "template/chat_template.h"

#include <chrono>
#include <exception>
#include <new>

#include "template/error.h"
#include "template/interpreter.h"
#include "template/lexer.h"
#include "template/parser.h"
#include "template/value.h"

namespace tessera {
namespace {

Status to_status(const tmpl::TemplateError& err) {
  if (err.raised) return invalid_argument(err.message);
  std::string msg = "chat template: ";
  if (err.has_position) msg += "line " + std::to_string(err.line) + ", column " + std::to_string(err.column) + ": ";
  msg += err.message;
  return Status(err.code, std::move(msg));
}

// The Status of the exception being handled by a render (call only inside a catch block).
Status current_render_error() {
  try {
    throw;
  } catch (const tmpl::TemplateError& err) {
    return to_status(err);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while rendering");
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template: ") + e.what());
  } catch (...) {
    return internal_error("chat template: unknown error while rendering");
  }
}

template <typename Json>
Result<std::string> render_json(const std::shared_ptr<const tmpl::Program>& program, const Json& context,
                                int64_t time_limit_ms) {
  if (!context.is_object() && !context.is_null()) return invalid_argument("chat template context must be a JSON object");
  try {
    tmpl::Value ctx = tmpl::from_json(context);
    tmpl::Interpreter interp(*program, ctx, std::chrono::milliseconds(time_limit_ms));
    tmpl::Value out = interp.render();
    return out.as_string();
  } catch (...) {
    return current_render_error();
  }
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, const ChatTemplateOptions& options) {
  try {
    tmpl::LexerOptions lex;
    lex.trim_blocks = options.trim_blocks;
    lex.lstrip_blocks = options.lstrip_blocks;
    std::shared_ptr<const tmpl::Program> program = tmpl::parse_tokens(tmpl::tokenize(source, lex));
    return ChatTemplate(std::move(program), options.render_time_limit_ms);
  } catch (const tmpl::TemplateError& err) {
    return to_status(err);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while parsing");
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template: ") + e.what());
  }
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context) const {
  return render_json(program_, context, time_limit_ms_);
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  return render_json(program_, context, time_limit_ms_);
}

Result<RenderedText> ChatTemplate::render_tagged(const nlohmann::ordered_json& caller_context,
                                                 const nlohmann::ordered_json& template_context) const {
  for (const auto* c : {&caller_context, &template_context}) {
    if (!c->is_object() && !c->is_null()) return invalid_argument("chat template context must be a JSON object");
  }
  try {
    tmpl::Object vars;
    if (caller_context.is_object()) {
      for (auto it = caller_context.begin(); it != caller_context.end(); ++it) {
        vars.set(it.key(), tmpl::from_json(it.value(), /*caller=*/true));
      }
    }
    if (template_context.is_object()) {
      for (auto it = template_context.begin(); it != template_context.end(); ++it) {
        vars.set(it.key(), tmpl::from_json(it.value(), /*caller=*/false));
      }
    }
    tmpl::Interpreter interp(*program_, tmpl::Value(std::move(vars)), std::chrono::milliseconds(time_limit_ms_));
    tmpl::Value out = interp.render();
    RenderedText r;
    r.text = out.as_string();
    size_t pos = 0;
    for (const tmpl::CallerRange& c : out.caller_ranges()) {
      if (c.begin > pos) r.spans.push_back({pos, c.begin, SpanOrigin::kTemplate});
      r.spans.push_back({c.begin, c.end, SpanOrigin::kCaller});
      pos = c.end;
    }
    if (pos < r.text.size()) r.spans.push_back({pos, r.text.size(), SpanOrigin::kTemplate});
    return r;
  } catch (...) {
    return current_render_error();
  }
}

Result<std::string> apply_chat_template(const ChatTemplate& t, const nlohmann::json& messages,
                                        bool add_generation_prompt, const std::string& bos_token,
                                        const std::string& eos_token) {
  nlohmann::json context = nlohmann::json::object();
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos_token;
  context["eos_token"] = eos_token;
  return t.render(context);
}

}  // namespace tessera
