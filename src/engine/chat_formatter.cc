// tessera::ChatFormatter (tessera/chat.h) over render_chat_tokens
// (template/chat_prompt.h): caller text never becomes control tokens.
#include <nlohmann/json.hpp>

#include "engine/vocab_impl.h"
#include "tessera/chat.h"
#include "template/chat_prompt.h"

namespace tessera {

struct ChatFormatter::Impl {
  const Tokenizer* tokenizer = nullptr;
  ChatTemplate tmpl;
};

ChatFormatter::ChatFormatter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatFormatter::~ChatFormatter() = default;

Result<std::unique_ptr<ChatFormatter>> ChatFormatter::create(const Vocab& vocab, std::string_view template_source) {
  TESSERA_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::parse(template_source));
  return std::make_unique<ChatFormatter>(std::make_unique<Impl>(Impl{&tokenizer_of(vocab), std::move(t)}));
}

Result<ChatPrompt> ChatFormatter::render(std::string_view messages_json, std::string_view tools_json,
                                         bool add_generation_prompt) const {
  using nlohmann::ordered_json;
  const ordered_json messages = ordered_json::parse(messages_json, nullptr, /*allow_exceptions=*/false);
  if (messages.is_discarded()) return invalid_argument("chat messages are not valid JSON");
  ChatPromptOptions options;
  options.add_generation_prompt = add_generation_prompt;
  if (!tools_json.empty()) {
    options.tools = ordered_json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
    if (options.tools.is_discarded() || !options.tools.is_array()) {
      return invalid_argument("chat tools must be a JSON array");
    }
  }
  TESSERA_ASSIGN_OR_RETURN(RenderedChat r, render_chat_tokens(impl_->tmpl, messages, options, *impl_->tokenizer));
  return ChatPrompt{std::move(r.text), std::move(r.token_ids)};
}

}  // namespace tessera
