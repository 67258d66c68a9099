#include "engine/ngram_proposer.h"

#include <algorithm>

namespace tessera {

NgramProposer::NgramProposer(int32_t n_min, int32_t n_max)
    : n_min_(n_min), n_max_(n_max), next_(static_cast<size_t>(n_max - n_min + 1)) {}

uint64_t NgramProposer::hash(const int32_t* first, int32_t n) {
  // FNV-1a over the token ids, then the splitmix64 finaliser.
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(n);
  for (int32_t i = 0; i < n; ++i) h = (h ^ static_cast<uint32_t>(first[i])) * 0x100000001b3ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

void NgramProposer::index_up_to(std::span<const int32_t> tokens) {
  // Position i is a continuation of the n-grams tokens[i - n, i). The latest
  // occurrence wins: later positions overwrite earlier ones.
  for (size_t i = std::max<size_t>(indexed_, 1); i < tokens.size(); ++i) {
    for (int32_t n = n_min_; n <= n_max_ && static_cast<size_t>(n) <= i; ++n) {
      next_[static_cast<size_t>(n - n_min_)][hash(tokens.data() + i - static_cast<size_t>(n), n)] =
          static_cast<int32_t>(i);
    }
  }
  indexed_ = std::max(indexed_, tokens.size());
}

void NgramProposer::propose(std::span<const int32_t> tokens, int32_t k, Proposal& out) {
  out.clear();
  if (k <= 0 || tokens.empty()) return;
  // Registers n-grams ending before the last token; the suffix itself has no
  // continuation yet, so a match is always an earlier occurrence.
  index_up_to(tokens);
  const size_t len = tokens.size();
  for (int32_t n = std::min<int32_t>(n_max_, static_cast<int32_t>(len)); n >= n_min_; --n) {
    const auto& map = next_[static_cast<size_t>(n - n_min_)];
    auto it = map.find(hash(tokens.data() + len - static_cast<size_t>(n), n));
    if (it == map.end()) continue;
    // Copy what followed; past the end of the history the copy continues
    // from its own start (a loop of period len - from repeats).
    const auto from = static_cast<size_t>(it->second);
    for (size_t j = 0; j < static_cast<size_t>(k); ++j) {
      const size_t idx = from + j;
      out.tokens.push_back(idx < len ? tokens[idx] : out.tokens[idx - len]);
    }
    return;
  }
}

}  // namespace tessera
