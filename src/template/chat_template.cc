#include "template/chat_template.h"

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

template <typename Json>
Result<std::string> render_json(const std::shared_ptr<const tmpl::Program>& program, const Json& context) {
  if (!context.is_object() && !context.is_null()) return invalid_argument("chat template context must be a JSON object");
  try {
    tmpl::Value ctx = tmpl::from_json(context);
    tmpl::Interpreter interp(*program, ctx);
    return interp.render();
  } catch (const tmpl::TemplateError& err) {
    return to_status(err);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while rendering");
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template: ") + e.what());
  }
}

}  // namespace

Result<ChatTemplate> ChatTemplate::parse(std::string_view source, const ChatTemplateOptions& options) {
  try {
    tmpl::LexerOptions lex;
    lex.trim_blocks = options.trim_blocks;
    lex.lstrip_blocks = options.lstrip_blocks;
    std::shared_ptr<const tmpl::Program> program = tmpl::parse_tokens(tmpl::tokenize(source, lex));
    return ChatTemplate(std::move(program));
  } catch (const tmpl::TemplateError& err) {
    return to_status(err);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("chat template: out of memory while parsing");
  } catch (const std::exception& e) {
    return internal_error(std::string("chat template: ") + e.what());
  }
}

Result<std::string> ChatTemplate::render(const nlohmann::json& context) const { return render_json(program_, context); }

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  return render_json(program_, context);
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
