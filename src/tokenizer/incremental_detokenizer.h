// IncrementalDetokenizer: turns a stream of generated token ids into text
// that is safe to show (or send) as soon as it arrives. A byte-fallback token
// may carry one byte of a multi-byte UTF-8 character; the detokenizer holds
// such bytes back until the character is complete, so every string push()
// returns is well-formed UTF-8 (RFC 3629).
//
// For well-formed output, the concatenation of all push() results and
// flush() equals Tokenizer::decode() of the same ids (when constructed with
// strip_leading_space = true; otherwise decode() without its leading-space
// removal). Ill-formed bytes are replaced by U+FFFD, one per maximal
// ill-formed subpart (Unicode Standard §3.9), where decode() keeps raw bytes.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tessera {

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive this object. `strip_leading_space`: the ids
  // start the text (the prompt was empty), so the one leading space the
  // SentencePiece dummy prefix put on the first non-empty piece is removed
  // as in decode(). Keep it false when the ids continue a prompt (`tessera
  // run`): there the space separates the continuation from the prompt.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool strip_leading_space = false);

  // Appends token `id` and returns the text completed by it: possibly "",
  // never ending inside a UTF-8 character (trailing bytes of an unfinished
  // character are held back). Out-of-range ids and control tokens add nothing.
  std::string push(int32_t id);

  // Returns the held-back bytes, an incomplete character becoming U+FFFD,
  // and empties the buffer. The leading-space state is kept, so push() may
  // continue afterwards.
  std::string flush();

  // Bytes currently held back (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  // Moves the complete prefix of pending_ to the result; at_end: the
  // incomplete tail is final too.
  std::string drain(bool at_end);

  const Tokenizer& tokenizer_;
  bool strip_pending_;
  std::string pending_;
};

}  // namespace tessera
