#include "template/chat_prompt.h"

#include <string_view>

namespace tessera {
namespace {

using nlohmann::ordered_json;

Status message_error(size_t i, std::string_view what) {
  return invalid_argument("messages[" + std::to_string(i) + "]: " + std::string(what));
}

// The message as the template sees it: role checked (developer -> system),
// content a string; other fields unchanged.
Result<ordered_json> normalize_message(const ordered_json& m, size_t i) {
  if (!m.is_object()) return message_error(i, "each message must be an object");
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) return message_error(i, "each message needs a string role");
  const std::string r = role->get<std::string>();
  if (r != "system" && r != "user" && r != "assistant" && r != "developer" && r != "tool") {
    return message_error(i, "unknown message role '" + r + "'");
  }
  ordered_json out = m;
  out["role"] = r == "developer" ? "system" : r;
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (r != "assistant") return message_error(i, "a " + r + " message needs content");
    out["content"] = "";
  } else if (content->is_array()) {
    std::string text;
    for (const auto& part : *content) {
      auto type = part.is_object() ? part.find("type") : part.end();
      auto t = part.is_object() ? part.find("text") : part.end();
      if (type == part.end() || *type != "text" || t == part.end() || !t->is_string()) {
        return message_error(i, "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
      }
      text += t->get<std::string>();
    }
    out["content"] = text;
  } else if (!content->is_string()) {
    return message_error(i, "message content must be a string or an array of text parts");
  }
  return out;
}

std::string token_text_or_empty(const Tokenizer& t, int32_t id) {
  return id >= 0 && id < t.n_vocab() ? t.token_text(id) : std::string();
}

}  // namespace

Result<RenderedChat> render_chat_tokens(const ChatTemplate& chat_template, const ordered_json& messages,
                                      const ChatPromptOptions& options, const Tokenizer& tokenizer) {
  if (!messages.is_array() || messages.empty()) return invalid_argument("messages must be a non-empty array");
  if (!options.tools.is_null() && !options.tools.is_array()) return invalid_argument("tools must be an array");
  ordered_json caller = ordered_json::object();
  ordered_json& normalized = caller["messages"] = ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ordered_json m, normalize_message(messages[i], i));
    normalized.push_back(std::move(m));
  }
  if (!options.tools.is_null()) caller["tools"] = options.tools;
  const std::string bos = token_text_or_empty(tokenizer, tokenizer.bos_id());
  ordered_json trusted = {{"add_generation_prompt", options.add_generation_prompt},
                          {"bos_token", bos},
                          {"eos_token", token_text_or_empty(tokenizer, tokenizer.eos_id())}};
  TESSERA_ASSIGN_OR_RETURN(RenderedText rendered, chat_template.render_tagged(caller, trusted));

  std::vector<TextRange> special;
  for (const TextSpan& s : rendered.spans) {
    if (s.origin == SpanOrigin::kTemplate) special.push_back({s.begin, s.end});
  }
  RenderedChat out;
  out.token_ids = tokenizer.encode(rendered.text, /*add_special=*/false, special);
  const int32_t bos_id = tokenizer.bos_id();
  if (tokenizer.add_bos() && bos_id >= 0 && (out.token_ids.empty() || out.token_ids.front() != bos_id)) {
    out.token_ids.insert(out.token_ids.begin(), bos_id);
  }
  out.text = std::move(rendered.text);
  out.spans = std::move(rendered.spans);
  return out;
}

}  // namespace tessera
