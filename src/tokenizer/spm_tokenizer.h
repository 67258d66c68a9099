// SentencePiece BPE tokenizer (Kudo & Richardson 2018, "SentencePiece: A
// simple and language independent subword tokenizer and detokenizer for
// Neural Text Processing", EMNLP; BPE after Sennrich et al. 2016) as applied
// to GGUF "llama" vocabularies (Llama 1/2, Mistral v0.1, Phi-3, TinyLlama,
// llama2.c models). The vocabulary stores no merge list: every token's score
// ranks it, and a merge is allowed whenever the concatenation of two adjacent
// symbols is a token.
//
// encode(text):
//   1. Split the text at user-defined tokens (type 4), matched verbatim,
//      leftmost first, longest at a position; each match is emitted as is.
//   2. For each remaining text fragment: prepend ' ' when add_space_prefix and
//      the fragment is at the start of the text or follows a user-defined
//      token (as llama.cpp and HF's legacy Llama tokenizer do), replace ' '
//      with U+2581, split into UTF-8 characters (a byte that does not start a
//      well-formed character is a symbol of its own).
//   3. Repeatedly merge the adjacent pair whose concatenation is a token of
//      type normal/user-defined/unused/undefined with the highest score
//      (ties: leftmost), using a max-heap of candidate pairs over a doubly
//      linked list of symbols; stale heap entries are skipped. O(n log n).
//   4. Each final symbol becomes its token; a symbol whose token is "unused"
//      is split back into the two symbols it was merged from (recursively);
//      a symbol without a token (a single character not in the vocabulary)
//      becomes the byte tokens "<0xNN>" of its UTF-8 bytes, or <unk> per
//      byte when the vocabulary lacks a byte token (dropped if there is no
//      <unk> either).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tessera {

class SpmTokenizer final : public Tokenizer {
 public:
  // Builds the lookup tables from a validated vocabulary (from_gguf() checks
  // it: lengths agree, ids in range, byte tokens parse). Tests may call this
  // directly.
  explicit SpmTokenizer(Vocabulary vocab);

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  std::string token_to_piece(int32_t id) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  bool strips_leading_space() const override { return vocab_.add_space_prefix; }

  // Byte-fallback token for byte `b`, or -1 when the vocabulary has none.
  int32_t byte_token(uint8_t b) const { return byte_to_token_[b]; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using TextMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  // BPE over one escaped fragment (spaces already U+2581); appends ids.
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  // Appends the byte-fallback tokens (or <unk>) for `bytes`.
  void append_bytes(std::string_view bytes, std::vector<int32_t>& out) const;
  // Id of the mergeable token spelled `text`, or -1.
  int32_t find_mergeable(std::string_view text) const;

  TextMap mergeable_;                      // text -> id, types normal/user-defined/unused/undefined
  std::vector<int32_t> user_defined_;      // type-4 ids, longest text first
  std::array<std::vector<int32_t>, 256> user_defined_by_first_byte_;  // same, bucketed
  std::array<int32_t, 256> byte_to_token_{};
};

// Parses a byte-token text "<0xNN>" (hex, either case); -1 if malformed.
int parse_byte_token(std::string_view text);

}  // namespace tessera
