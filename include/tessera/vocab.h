// A model's vocabulary and tokenizer (SentencePiece BPE or byte-level BPE,
// from a GGUF file's tokenizer.ggml.* metadata or a Hugging Face
// tokenizer.json), as the public API sees it. An Engine hands out a view of
// its model's (Engine::vocab()); Vocab::load reads one on its own, so a
// vocab-only GGUF file is enough to tokenize.
//
// Thread safety: every method is const and safe to call from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"

namespace tessera {

class Vocab {
 public:
  // Reads the tokenizer of `path`: a directory is a Hugging Face checkpoint
  // (tokenizer.json + tokenizer_config.json), anything else a GGUF file.
  // Errors: a missing or corrupt file, no tokenizer in it.
  static Result<std::unique_ptr<Vocab>> load(const std::string& path);

  struct Impl;  // defined by the implementation
  explicit Vocab(std::unique_ptr<Impl> impl);
  ~Vocab();
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  // Tokens in the vocabulary; ids are [0, size()).
  int32_t size() const;

  // Token ids of `text`. add_special: BOS (and EOS) as the vocabulary's
  // add_bos/add_eos flags say. parse_special: spellings of control tokens
  // in the text (e.g. "<|im_start|>") become those tokens; off (the default,
  // and the rule for any text from users), they are ordinary text.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = false) const;

  // Text of `ids`; every id must be in [0, size()) (checked: kInvalidArgument).
  Result<std::string> decode(std::span<const int32_t> ids) const;

  // A token's text as stored in the vocabulary (SentencePiece spaces are
  // U+2581, byte-level BPE bytes are mapped characters); "" outside the vocabulary.
  std::string token_text(int32_t id) const;

  // The UTF-8 bytes `id` contributes to decoded text (may be a partial
  // character); "" outside the vocabulary.
  std::string token_piece(int32_t id) const;

  int32_t bos_id() const;  // -1 when the vocabulary has none
  int32_t eos_id() const;  // -1 when the vocabulary has none
  // End-of-generation tokens: EOS, end-of-turn, end-of-message.
  bool is_eog(int32_t id) const;

  // The chat template (Jinja source) the model file carries; "" when none.
  const std::string& chat_template() const;

  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
