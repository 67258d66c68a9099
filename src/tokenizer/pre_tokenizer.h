// Text normalizers and pre-tokenizers for BPE tokenizers, modelled on the
// pipeline of Hugging Face `tokenizers` (tokenizer.json "normalizer" and
// "pre_tokenizer" sections) and on llama.cpp's per-`tokenizer.ggml.pre`
// split regexes for GGUF vocabularies.
//
// A Normalizer rewrites a text fragment (the text between added tokens).
// A PreTokenizer then cuts the normalized fragment into pieces ("words");
// BPE merges never cross a piece boundary. Steps run in order, each on every
// piece the previous step produced:
//   Split      regex matches (SplitRegex) and the text between them become
//              pieces according to a SplitBehavior (HF's
//              SplitDelimiterBehavior); `invert` swaps the roles of matches
//              and gaps. HF's Digits, Punctuation, Whitespace and
//              WhitespaceSplit are Split steps with fixed patterns.
//   ByteLevel  GPT-2 byte-level step (Radford et al. 2019): optionally puts
//              a ' ' in front of each piece that lacks one, optionally
//              splits with the GPT-2 regex, then rewrites every byte as its
//              byte_unicode character. When it is the last step the rewrite
//              is left to the BPE model (pieces come back as raw bytes, see
//              Pieces::raw_bytes), which saves a copy.
//   Metaspace  SentencePiece-style: ' ' -> replacement (U+2581), the
//              replacement put in front per PrependScheme, optionally split
//              before each replacement (HF Metaspace).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/status.h"
#include "tokenizer/split_regex.h"

namespace tessera {

// ---------------------------------------------------------------- normalizer

struct NormalizerStep {
  enum class Kind {
    kReplace,       // every occurrence of `pattern` -> `content` (literal)
    kReplaceRegex,  // every match of `regex` -> `content`
    kPrepend,       // `content` in front of a non-empty text
    kNfc,           // Unicode normalization forms (UAX #15) via utf8proc;
    kNfd,           //   ill-formed UTF-8 is left unchanged
    kNfkc,
    kNfkd,
    kLowercase,     // per code point (utf8proc_tolower)
    kStrip,         // remove leading (`left`) / trailing (`right`) white space
  };
  Kind kind = Kind::kReplace;
  std::string pattern;
  std::string content;
  std::shared_ptr<const SplitRegex> regex;
  bool left = false;
  bool right = false;
};

class Normalizer {
 public:
  void add(NormalizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }
  // `text` after every step in order.
  std::string apply(std::string_view text) const;

 private:
  std::vector<NormalizerStep> steps_;
};

// ------------------------------------------------------------- pre-tokenizer

// What happens to a regex match (the "delimiter") and the text around it,
// e.g. for "the-final--countdown" split on "-":
//   kRemoved            "the" "final" "countdown"
//   kIsolated           "the" "-" "final" "-" "-" "countdown"
//   kMergedWithPrevious "the-" "final-" "-" "countdown"
//   kMergedWithNext     "the" "-final" "-" "-countdown"
//   kContiguous         "the" "-" "final" "--" "countdown"
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// When Metaspace puts the replacement in front: always, only for the first
// piece of the whole input text, or never.
enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  Kind kind = Kind::kSplit;
  std::shared_ptr<const SplitRegex> regex;  // kSplit; kByteLevel with use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  bool add_prefix_space = false;         // kByteLevel
  std::string replacement = "\xE2\x96\x81";  // kMetaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;                      // kMetaspace: split before each replacement
};

// The pieces of one fragment. Views point into the fragment text or into
// `arena` (transformed text); the object must not be copied while in use.
struct Pieces {
  std::vector<std::string_view> views;
  std::deque<std::string> arena;
  // True: the pieces are raw bytes that still need the GPT-2 byte-level
  // mapping (a trailing ByteLevel step was deferred to the model).
  bool raw_bytes = false;
  void clear() {
    views.clear();
    arena.clear();
    raw_bytes = false;
  }
};

class PreTokenizer {
 public:
  void add(PreTokenizerStep step) { steps_.push_back(std::move(step)); }
  bool empty() const { return steps_.empty(); }
  // Whether any step is ByteLevel (the model's alphabet is byte-level).
  bool byte_level() const;

  // Cuts `text` into `out` (cleared first; empty pieces are dropped).
  // `at_text_start`: the fragment begins the input text (PrependScheme::kFirst).
  void run(std::string_view text, bool at_text_start, Pieces& out) const;

  // Common steps. Patterns are fixed and valid, so these cannot fail.
  static PreTokenizerStep split(std::string_view pattern, SplitBehavior behavior = SplitBehavior::kIsolated,
                                bool invert = false);
  static PreTokenizerStep byte_level(bool add_prefix_space, bool use_regex);
  // HF Digits: runs of \p{N} (or single ones when `individual`) isolated.
  static PreTokenizerStep digits(bool individual);
  // HF Punctuation: ASCII punctuation and \p{P}.
  static PreTokenizerStep punctuation(SplitBehavior behavior);

 private:
  std::vector<PreTokenizerStep> steps_;
};

// The GPT-2 split regex (openai/gpt-2 encoder.py), also HF ByteLevel's.
extern const char* const kGpt2SplitPattern;

// Settings llama.cpp derives from `tokenizer.ggml.pre`.
struct GgufPreset {
  PreTokenizer pre_tokenizer;  // ends with a ByteLevel step
  bool add_bos = false;        // default when tokenizer.ggml.add_bos_token is absent
  bool ignore_merges = false;  // a piece that is itself a token is not merged (Llama 3)
};

// The pre-tokenizer for a GGUF "gpt2" vocabulary. `pre` is the value of
// tokenizer.ggml.pre ("" when absent = "default"). Known: default, gpt-2,
// gpt2, mpt, olmo, jais, llama3, llama-v3, llama-bpe, falcon3, smaug-bpe,
// qwen2, stablelm2, deepseek-llm, deepseek-coder, falcon, starcoder, refact,
// command-r. kUnimplemented for any other name.
Result<GgufPreset> gguf_preset(std::string_view pre);

}  // namespace tessera
