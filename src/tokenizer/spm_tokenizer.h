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
//      Every symbol carries an integer key (its token id, or a private id for
//      a character that is not a token), and "is the concatenation a token"
//      is one lookup of the key pair in a table built once from every split
//      of every mergeable token; no string is hashed per merge. The fragment
//      is first cut between characters whose adjacent bytes occur together in
//      no mergeable token (no merge can ever cross such a cut, so the result
//      is unchanged), which keeps the heap per chunk small.
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
  using Tokenizer::encode;
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

  struct Scratch;
  // BPE over one escaped fragment (spaces already U+2581); appends ids. The
  // fragment is cut into chunks at character boundaries no token spans
  // (joinable() false), each encoded on its own by encode_chunk().
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;
  void encode_chunk(std::string_view text, std::vector<int32_t>& out, Scratch& scratch) const;
  // Whether byte `a` directly followed by byte `b` occurs in a mergeable token.
  bool joinable(uint8_t a, uint8_t b) const { return (joinable_[a * 4u + (b >> 6u)] >> (b & 63u)) & 1u; }
  // Appends the byte-fallback tokens (or <unk>) for `bytes`.
  void append_bytes(std::string_view bytes, std::vector<int32_t>& out) const;
  // Id of the mergeable token spelled `text`, or -1.
  int32_t find_mergeable(std::string_view text) const;
  // Key of a symbol spelled `text` (one character or a mergeable token): the
  // token id, a private key >= n_vocab for a character that only occurs
  // inside tokens, or -1 when the symbol can take part in no merge.
  int32_t symbol_key(std::string_view text) const;
  // Builds char_keys_, byte_keys_ and pair_merges_.
  void build_pair_table();

  // Open-addressing map (left key, right key) -> id of the merged token.
  class PairTable {
   public:
    void build(const std::vector<std::pair<uint64_t, int32_t>>& entries);
    int32_t find(int32_t left, int32_t right) const {
      if (slots_.empty()) return -1;
      const uint64_t key = pack(left, right);
      for (size_t i = hash(key);; i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.key == key) return s.value;
        if (s.key == kEmpty) return -1;
      }
    }
    static uint64_t pack(int32_t left, int32_t right) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
    }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t{0};
    struct Slot {
      uint64_t key = kEmpty;
      int32_t value = -1;
    };
    size_t hash(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    int shift_ = 64;
  };

  TextMap mergeable_;                      // text -> id, types normal/user-defined/unused/undefined
  std::vector<int32_t> user_defined_;      // type-4 ids, longest text first
  std::array<std::vector<int32_t>, 256> user_defined_by_first_byte_;  // same, bucketed
  std::array<int32_t, 256> byte_to_token_{};
  TextMap char_keys_;                   // private keys of characters that are not tokens
  std::array<int32_t, 256> byte_keys_{};  // symbol_key() of each one-byte symbol
  PairTable pair_merges_;
  std::array<uint64_t, 1024> joinable_{};  // 256 x 256 bits, see joinable()
};

// Parses a byte-token text "<0xNN>" (hex, either case); -1 if malformed.
int parse_byte_token(std::string_view text);

}  // namespace tessera
