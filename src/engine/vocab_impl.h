// The inside of tessera::Vocab (tessera/vocab.h): an internal Tokenizer,
// owned (Vocab::load) or borrowed from a Model (Engine::vocab()).
#pragma once

#include <memory>

#include "tessera/vocab.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct Vocab::Impl {
  std::unique_ptr<Tokenizer> owned;  // null when borrowed
  const Tokenizer* tokenizer = nullptr;
};

// A Vocab viewing `tokenizer`, which must outlive it.
std::unique_ptr<Vocab> make_vocab_view(const Tokenizer& tokenizer);

// The Tokenizer behind a Vocab.
inline const Tokenizer& tokenizer_of(const Vocab& vocab) {
  return *vocab.impl().tokenizer;
}

}  // namespace tessera
