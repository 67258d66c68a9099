// NgramProposer: prompt lookup decoding (Saxena 2023; vLLM's "ngram"
// speculator). The proposal is the tokens that followed the latest earlier
// occurrence of the sequence's last n tokens, for the largest n in
// [n_min, n_max] that occurs (k tokens; where the copy reaches the end of the
// history it goes on from its own start, so a loop keeps being proposed); no
// second model. Deterministic (q one-hot).
//
// The index is incremental: for each n, a hash map from an n-gram to the
// position right after its latest occurrence, extended by the tokens appended
// since the previous call — O((n_max - n_min + 1) * n_max) per new token, no
// rescan of the history. A hash collision can only cost acceptance, never
// correctness (verification checks every proposed token).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/proposer.h"

namespace tessera {

class NgramProposer final : public Proposer {
 public:
  // 1 <= n_min <= n_max (checked by SpeculativeOptions::validate).
  NgramProposer(int32_t n_min, int32_t n_max);

  void propose(std::span<const int32_t> tokens, int32_t k, Proposal& out) override;

 private:
  // Registers every n-gram that ends right before position i (tokens[i] follows it).
  void index_up_to(std::span<const int32_t> tokens);
  static uint64_t hash(const int32_t* first, int32_t n);

  int32_t n_min_;
  int32_t n_max_;
  size_t indexed_ = 0;  // positions i < indexed_ have been registered as continuations
  std::vector<std::unordered_map<uint64_t, int32_t>> next_;  // [n - n_min]: n-gram hash -> continuation position
};

}  // namespace tessera
