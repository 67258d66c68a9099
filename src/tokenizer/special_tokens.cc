#include "tokenizer/special_tokens.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace tessera {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocabulary& vocab, bool control, bool user_defined) {
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    const TokenType t = vocab.types[i];
    const bool is_control = t == TokenType::kControl;
    if (!((control && is_control) || (user_defined && t == TokenType::kUserDefined))) continue;
    const std::string& text = vocab.tokens[i];
    if (text.empty()) continue;
    by_first_byte_[static_cast<uint8_t>(text[0])].push_back({text, static_cast<int32_t>(i), is_control});
    ++n_tokens_;
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const Entry& a, const Entry& b) { return a.text.size() > b.text.size(); });
  }
}

void SpecialTokenMatcher::split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const {
  const TextRange all{0, text.size()};
  split(text, parse_special ? std::span<const TextRange>(&all, 1) : std::span<const TextRange>(), out);
}

void SpecialTokenMatcher::split(std::string_view text, std::span<const TextRange> control_ranges,
                                std::vector<Fragment>& out) const {
  size_t start = 0;
  size_t pos = 0;
  size_t range = 0;  // the first control range that does not end before `pos`
  if (n_tokens_ > 0) {
    while (pos < text.size()) {
      while (range < control_ranges.size() && control_ranges[range].end <= pos) ++range;
      const bool in_range = range < control_ranges.size() && control_ranges[range].begin <= pos;
      const size_t range_end = in_range ? control_ranges[range].end : 0;
      const Entry* match = nullptr;
      for (const Entry& e : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
        if (e.control && (!in_range || pos + e.text.size() > range_end)) continue;
        if (text.compare(pos, e.text.size(), e.text) == 0) {
          match = &e;
          break;
        }
      }
      if (match == nullptr) {
        ++pos;
        continue;
      }
      if (pos > start) out.push_back({text.substr(start, pos - start), -1});
      out.push_back({match->text, match->id});
      pos += match->text.size();
      start = pos;
    }
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

}  // namespace tessera
