// Tokenizer: text <-> token ids for the vocabularies stored in GGUF files
// (metadata keys `tokenizer.ggml.*`, GGUF spec: github.com/ggml-org/ggml
// docs/gguf.md, "Tokenizer" section).
//
// Tokenizer is the interface the engine uses; from_gguf() picks the
// implementation named by `tokenizer.ggml.model`:
//   "llama" -> SpmTokenizer (SentencePiece BPE, Kudo & Richardson 2018;
//              src/tokenizer/spm_tokenizer.h)
//   "gpt2"  -> BpeTokenizer (GPT-2 byte-level BPE with ranked merges;
//              src/tokenizer/bpe_tokenizer.h), pre-tokenizer chosen by
//              `tokenizer.ggml.pre` (src/tokenizer/pre_tokenizer.h)
//   others  -> kUnimplemented.
// from_hf_json() builds a BpeTokenizer from a Hugging Face tokenizer.json
// (src/tokenizer/hf_tokenizer_json.h).
//
// The base class owns the vocabulary (token texts, scores, types and the
// special ids) and its accessors; subclasses implement encode/decode.
// A Tokenizer is immutable after construction, so one object may be used
// from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf_reader.h"
#include "tessera/status.h"
#include "tokenizer/special_tokens.h"

namespace tessera {

// Token types as numbered in `tokenizer.ggml.token_type` (llama.cpp's
// llama_token_type, which mirrors SentencePiece's ModelProto.SentencePiece.Type
// plus 0 = undefined).
enum class TokenType : int32_t {
  kUndefined = 0,    // treated like kNormal
  kNormal = 1,
  kUnknown = 2,      // the <unk> token
  kControl = 3,      // <s>, </s>, chat markers: never produced from plain text
  kUserDefined = 4,  // matched verbatim in the text before BPE
  kUnused = 5,       // may take part in merges but is never emitted (resegmented)
  kByte = 6,         // byte-fallback token "<0xNN>"
};

// The vocabulary shared by all tokenizer implementations. Ids are indices
// into `tokens`; -1 means "this vocabulary has no such token".
struct Vocabulary {
  std::string model;                // tokenizer.ggml.model, e.g. "llama"; "hf-bpe" from tokenizer.json
  std::string pre;                  // tokenizer.ggml.pre, e.g. "llama-bpe" ("" when absent)
  std::vector<std::string> tokens;  // token texts as stored (SentencePiece: spaces are U+2581)
  std::vector<float> scores;        // one per token (0 when the file has none)
  std::vector<TokenType> types;     // one per token (kNormal when the file has none)
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;  // end of turn (tokenizer.ggml.eot_token_id), if any
  int32_t eom_id = -1;  // end of message (tokenizer.ggml.eom_token_id), if any
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  bool add_bos = true;           // tokenizer.ggml.add_bos_token
  bool add_eos = false;          // tokenizer.ggml.add_eos_token
  bool add_space_prefix = true;  // tokenizer.ggml.add_space_prefix
  std::string chat_template;     // tokenizer.chat_template / tokenizer_config.json ("" when none)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Builds the tokenizer described by the `tokenizer.ggml.*` metadata of
  // `gguf`. Reads tokenizer.ggml.{model, tokens, scores, token_type,
  // bos_token_id, eos_token_id, eot_token_id, eom_token_id, unknown_token_id,
  // padding_token_id, add_bos_token, add_eos_token, add_space_prefix}.
  // Defaults for "llama" when a key is absent: scores 0, types normal,
  // bos 1, eos 2, unk 0 (each only if < n_vocab), add_bos true, add_eos
  // false, add_space_prefix true. An id stored as -1 or as uint32 0xFFFFFFFF
  // means "none".
  // Errors (messages name the key):
  //   kNotFound        tokenizer.ggml.model or tokenizer.ggml.tokens missing;
  //   kInvalidArgument a key has the wrong GGUF type;
  //   kDataLoss        empty token list, scores/token_type length differs from
  //                    tokens, a token type outside 0..6, a byte token whose
  //                    text is not "<0xNN>", a special id outside [0, n_vocab);
  //   kUnimplemented   any model other than "llama" and "gpt2", or an unknown
  //                    tokenizer.ggml.pre.
  // "gpt2" additionally reads tokenizer.ggml.{pre, merges} (merges: strings
  // "left right"; required) and uses no defaults for the special ids (absent
  // = none); add_bos defaults to llama.cpp's per-pre choice (true for the
  // Llama 3 family, else false), add_eos to false, add_space_prefix to false.
  // Both read tokenizer.chat_template when present (chat_template()).
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& gguf);

  // Builds the tokenizer described by a Hugging Face tokenizer.json (model
  // type "BPE") and, when `tokenizer_config_json_path` is not empty, its
  // tokenizer_config.json (bos_token, eos_token, unk_token, pad_token,
  // add_bos_token, add_eos_token, chat_template). See hf_tokenizer_json.h
  // for the supported normalizers, pre-tokenizers and decoders.
  // Errors: kNotFound (a file cannot be read), kDataLoss (not JSON, missing
  // or malformed fields, ids out of range), kUnimplemented (another model
  // type, or an unsupported normalizer/pre-tokenizer/decoder, named).
  static Result<std::unique_ptr<Tokenizer>> from_hf_json(const std::string& tokenizer_json_path,
                                                         const std::string& tokenizer_config_json_path);
  // from_hf_json(dir/tokenizer.json, dir/tokenizer_config.json if it exists).
  static Result<std::unique_ptr<Tokenizer>> from_hf_dir(const std::string& dir);

  // Token ids for `text` (arbitrary bytes; invalid UTF-8 is encoded through
  // byte-fallback tokens, or <unk> when the vocabulary has none). With
  // `add_special`, BOS is prepended when add_bos() and EOS appended when
  // add_eos(). Control tokens are never produced from the text itself: "<s>"
  // in the text is tokenized as the characters '<', 's', '>'.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special) const = 0;

  // As encode(text, add_special), but with `parse_special` control tokens
  // written in the text ("<|im_start|>", "<s>", ...) are matched verbatim
  // (leftmost, longest first) and emitted as their ids; the chat-template
  // path passes true, plain user text false. User-defined tokens are always
  // matched. The default implementation splits the text at control tokens
  // and encodes the pieces in between with encode(piece, false) (so a
  // SentencePiece dummy prefix follows every control token, as in llama.cpp).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // As encode(text, add_special), but control tokens written in the text
  // are matched where they lie wholly inside one of `special_ranges`
  // (sorted, disjoint byte ranges of `text`: the parts a chat template
  // wrote); anywhere else their spelling is plain text. The plain text
  // between matched control tokens is encoded as one piece, whichever
  // ranges it spans, so marking text as special changes nothing but the
  // matching. encode(text, add_special, true) is this with one range over
  // the whole text.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      std::span<const TextRange> special_ranges) const;

  // The bytes token `id` contributes to the text. SentencePiece: U+2581 ->
  // ' ', byte token "<0xNN>" -> that one byte (possibly part of a multi-byte
  // UTF-8 character), control tokens -> "", unknown -> " \u2047 ".
  // Out-of-range ids give "".
  virtual std::string token_to_piece(int32_t id) const = 0;

  // The text of `ids`: the concatenation of token_to_piece(), except that
  // (SentencePiece) one leading space of the first non-empty piece is removed
  // when add_space_prefix() (it is the dummy prefix encode() inserted);
  // leading control tokens such as BOS are skipped first, so
  // decode(encode(t, true)) == t for valid UTF-8 `t` without user-defined
  // tokens. This is SentencePiece's DecodeIds / HF decode(skip_special_tokens)
  // behaviour; llama.cpp's llama_detokenize differs when BOS comes first (it
  // then keeps the space). Bytes are returned as they are, so the result can
  // be invalid UTF-8 when `ids` end inside a character.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;

  // Whether decode() removes one leading space from the first non-empty
  // piece (the inverse of SentencePiece's dummy prefix); used by
  // IncrementalDetokenizer.
  virtual bool strips_leading_space() const = 0;

  int32_t n_vocab() const { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const { return vocab_.bos_id; }
  int32_t eos_id() const { return vocab_.eos_id; }
  int32_t eot_id() const { return vocab_.eot_id; }
  int32_t unk_id() const { return vocab_.unk_id; }
  int32_t pad_id() const { return vocab_.pad_id; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  bool add_space_prefix() const { return vocab_.add_space_prefix; }
  // The model's chat template (Jinja source), "" when the file has none.
  const std::string& chat_template() const { return vocab_.chat_template; }

  // True when generation should stop at `id`: EOS, EOT, EOM, and control
  // tokens whose text is a well-known end-of-turn marker ("<|eot_id|>",
  // "<|end|>", "<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eom_id|>").
  bool is_eog(int32_t id) const;

  // Stored text of token `id` (SentencePiece spaces as U+2581); "" when out of range.
  const std::string& token_text(int32_t id) const;
  // Type of token `id`; kUndefined when out of range.
  TokenType token_type(int32_t id) const;
  // Score of token `id`; 0 when out of range.
  float token_score(int32_t id) const;
  const Vocabulary& vocabulary() const { return vocab_; }

 protected:
  explicit Tokenizer(Vocabulary vocab);

  bool in_range(int32_t id) const { return id >= 0 && id < n_vocab(); }

  Vocabulary vocab_;
  std::vector<int32_t> eog_ids_;  // sorted
  SpecialTokenMatcher control_tokens_;  // control tokens of vocab_, for the default encode()
};

}  // namespace tessera
