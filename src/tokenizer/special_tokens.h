// SpecialTokenMatcher: finds added tokens (control and user-defined token
// types) written verbatim in a text, before any normalization or
// pre-tokenization, as llama.cpp and Hugging Face `tokenizers` do.
// Matching is leftmost first and, at one position, longest first.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tessera {

struct Vocabulary;

// Bytes [begin, end) of a text.
struct TextRange {
  size_t begin = 0;
  size_t end = 0;
};

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher() = default;
  // Indexes the non-empty tokens of `vocab` whose type is control (when
  // `control`) or user-defined (when `user_defined`).
  SpecialTokenMatcher(const Vocabulary& vocab, bool control, bool user_defined);

  // A piece of the text: a token (`id` >= 0) or plain text (`id` == -1).
  struct Fragment {
    std::string_view text;
    int32_t id;
  };

  // Cuts `text` into fragments (appended to `out`, views into `text`; no
  // empty text fragments). Control tokens match only when `parse_special`;
  // user-defined tokens always.
  void split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;
  // As split(), but a control token matches only where it lies wholly inside
  // one of `control_ranges` (sorted, disjoint ranges of `text`); elsewhere
  // its spelling is plain text. User-defined tokens match everywhere.
  void split(std::string_view text, std::span<const TextRange> control_ranges, std::vector<Fragment>& out) const;

  bool empty() const { return n_tokens_ == 0; }

 private:
  struct Entry {
    std::string_view text;  // points into the Vocabulary the matcher was built from
    int32_t id;
    bool control;
  };
  std::array<std::vector<Entry>, 256> by_first_byte_;  // longest first
  size_t n_tokens_ = 0;
};

}  // namespace tessera
