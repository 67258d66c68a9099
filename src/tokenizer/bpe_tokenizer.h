// BPE tokenizer with an explicit, ranked merge list (Sennrich et al. 2016,
// "Neural Machine Translation of Rare Words with Subword Units", ACL), in two
// flavours behind the Tokenizer interface:
//   * GPT-2 byte-level BPE (Radford et al. 2019): the pre-tokenizer ends with
//     a ByteLevel step, every byte of a piece is one initial symbol (its
//     byte_unicode character); GGUF `tokenizer.ggml.model` = "gpt2" and HF
//     tokenizer.json with a ByteLevel pre-tokenizer (GPT-2, Llama 3, Qwen2,
//     DeepSeek, Falcon, ...).
//   * Character BPE with byte fallback (HF tokenizer.json of Llama 2 /
//     Mistral): every UTF-8 character is an initial symbol; a character that
//     is not a token becomes its "<0xNN>" byte tokens (or <unk>).
//
// encode(text, add_special, special_ranges):
//   1. Split the text at added tokens (SpecialTokenMatcher): user-defined
//      tokens always, control tokens only inside `special_ranges`. Each
//      match is emitted as its id.
//   2. Each remaining fragment: Normalizer, then PreTokenizer -> pieces.
//   3. Each piece: when `ignore_merges` and the whole piece is a token, that
//      token. Otherwise its initial symbols are merged repeatedly, always the
//      adjacent pair with the lowest merge rank (ties: leftmost), using a
//      min-heap of candidate pairs over a linked list of symbols (stale
//      entries skipped), O(n log n) per piece.
//   4. Each final symbol is a token by construction; an initial symbol that
//      is not a token becomes byte tokens "<0xNN>" (when byte_fallback and
//      all exist), else <unk> (consecutive ones fused with fuse_unk), else
//      nothing.
//   With `add_special`, BOS is prepended when add_bos() and EOS appended when
//   add_eos().
//
// Decoding: control and unknown tokens -> ""; user-defined tokens -> their
// text; byte tokens -> their byte; other tokens -> their text mapped back
// through the byte-level alphabet (byte-level decoders) or with the
// decoder's string replacements ("\u2581" -> " " for SentencePiece-style).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

// Everything about a BPE model besides the Vocabulary.
struct BpeConfig {
  // Merges in rank order (rank = index): the two token texts that merge.
  // Merges whose parts or concatenation are not tokens are ignored.
  std::vector<std::pair<std::string, std::string>> merges;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;
  // Decoder: byte-level mapping (true), or replacements applied to the
  // token text (e.g. {"\u2581", " "}).
  bool decode_byte_level = true;
  std::vector<std::pair<std::string, std::string>> decode_replacements;
  // decode() drops one leading space (inverse of a prepended U+2581).
  bool strip_leading_space = false;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // `vocab` must be consistent (tokens/scores/types of equal length, special
  // ids in range), as Tokenizer::from_gguf and from_hf_json check.
  // kDataLoss when more than 2^31 merges.
  static Result<std::unique_ptr<BpeTokenizer>> create(Vocabulary vocab, BpeConfig config);

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
  std::vector<int32_t> encode(std::string_view text, bool add_special,
                              std::span<const TextRange> special_ranges) const override;
  using Tokenizer::encode;
  std::string token_to_piece(int32_t id) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  bool strips_leading_space() const override { return config_.strip_leading_space; }

  // Merges that take part in tokenization (both parts and the result are tokens).
  size_t n_merges() const { return merges_.size(); }
  // Id of the token spelled `text` (any type but kControl; first id wins), or -1.
  int32_t find_token(std::string_view text) const;
  // The pre-tokenizer, decoder and flags this tokenizer was built with
  // (GGUF export: model/convert_hf.h). config().merges is empty: the merges
  // live in a lookup table, see ranked_merges().
  const BpeConfig& config() const { return config_; }
  // The merges that take part in tokenization, as token texts in rank order
  // (for each pair of tokens the first-ranked merge of the list it was built from).
  std::vector<std::pair<std::string, std::string>> ranked_merges() const;

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using TextMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
  struct Merge {
    int32_t rank;
    int32_t id;  // token of the concatenation
  };
  struct Scratch;

  BpeTokenizer(Vocabulary vocab, BpeConfig config);
  void encode_fragment(std::string_view text, bool at_text_start, std::vector<int32_t>& out, Scratch& s) const;
  void encode_piece(std::string_view piece, bool raw_bytes, std::vector<int32_t>& out, Scratch& s) const;
  // Tokens for an initial symbol that is not a token.
  // `after_unknown`: the previous symbol of the same piece was unknown too.
  void append_unknown(std::string_view bytes, bool after_unknown, std::vector<int32_t>& out) const;
  const Merge* find_merge(int32_t left, int32_t right) const;

  BpeConfig config_;
  TextMap token_ids_;  // every token text -> first id
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_level_ids_{};     // byte -> token of its byte_unicode character
  std::array<int32_t, 256> byte_fallback_ids_{};  // byte -> "<0xNN>" token
  bool all_byte_fallback_ = false;
  SpecialTokenMatcher specials_;
};

}  // namespace tessera
