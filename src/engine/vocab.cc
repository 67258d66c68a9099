// tessera::Vocab over the internal Tokenizer.
#include <filesystem>
#include <string>

#include "engine/vocab_impl.h"
#include "formats/gguf_reader.h"

namespace tessera {

Vocab::Vocab(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Vocab::~Vocab() = default;

Result<std::unique_ptr<Vocab>> Vocab::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    TESSERA_ASSIGN_OR_RETURN(impl->owned, Tokenizer::from_hf_dir(path));
  } else {
    TESSERA_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
    TESSERA_ASSIGN_OR_RETURN(impl->owned, Tokenizer::from_gguf(file));
  }
  impl->tokenizer = impl->owned.get();
  return std::make_unique<Vocab>(std::move(impl));
}

std::unique_ptr<Vocab> make_vocab_view(const Tokenizer& tokenizer) {
  auto impl = std::make_unique<Vocab::Impl>();
  impl->tokenizer = &tokenizer;
  return std::make_unique<Vocab>(std::move(impl));
}

int32_t Vocab::size() const {
  return impl_->tokenizer->n_vocab();
}

std::vector<int32_t> Vocab::encode(std::string_view text, bool add_special, bool parse_special) const {
  return impl_->tokenizer->encode(text, add_special, parse_special);
}

Result<std::string> Vocab::decode(std::span<const int32_t> ids) const {
  for (int32_t id : ids) {
    if (id < 0 || id >= size()) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                              std::to_string(size()) + ")");
    }
  }
  return impl_->tokenizer->decode(std::vector<int32_t>(ids.begin(), ids.end()));
}

std::string Vocab::token_text(int32_t id) const {
  if (id < 0 || id >= size()) return {};
  return impl_->tokenizer->token_text(id);
}

std::string Vocab::token_piece(int32_t id) const {
  if (id < 0 || id >= size()) return {};
  return impl_->tokenizer->token_to_piece(id);
}

int32_t Vocab::bos_id() const {
  return impl_->tokenizer->bos_id();
}
int32_t Vocab::eos_id() const {
  return impl_->tokenizer->eos_id();
}
bool Vocab::is_eog(int32_t id) const {
  return impl_->tokenizer->is_eog(id);
}
const std::string& Vocab::chat_template() const {
  return impl_->tokenizer->chat_template();
}

}  // namespace tessera
