// tessera::ChatFormatter (tessera/chat.h) over ChatTemplate and the Tokenizer.
#include <nlohmann/json.hpp>

#include "engine/vocab_impl.h"
#include "template/chat_template.h"
#include "tessera/chat.h"

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

Result<ChatPrompt> ChatFormatter::render(std::string_view messages_json, bool add_generation_prompt) const {
  const nlohmann::json messages = nlohmann::json::parse(messages_json, nullptr, /*allow_exceptions=*/false);
  if (messages.is_discarded() || !messages.is_array()) {
    return invalid_argument("chat messages must be a JSON array of objects");
  }
  for (const auto& m : messages) {
    if (!m.is_object()) return invalid_argument("chat messages must be a JSON array of objects");
  }
  const Tokenizer& tok = *impl_->tokenizer;
  auto name = [&](int32_t id) { return id >= 0 && id < tok.n_vocab() ? tok.token_text(id) : std::string(); };
  const std::string bos = name(tok.bos_id());
  ChatPrompt out;
  TESSERA_ASSIGN_OR_RETURN(out.text,
                           apply_chat_template(impl_->tmpl, messages, add_generation_prompt, bos, name(tok.eos_id())));
  // The template writes BOS itself when it wants one.
  const bool template_has_bos = !bos.empty() && out.text.rfind(bos, 0) == 0;
  out.tokens = tok.encode(out.text, /*add_special=*/!template_has_bos, /*parse_special=*/true);
  return out;
}

}  // namespace tessera
