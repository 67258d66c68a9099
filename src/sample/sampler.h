// Sampler: turns one row of logits into the next token for one sequence.
// Processors run in a fixed, documented order:
//   logit bias -> penalties (repetition, presence, frequency) -> temperature
//   -> top-k -> top-p -> min-p -> typical -> draw.
// References: temperature / softmax; top-k; top-p (nucleus, Holtzman et al.
// 2019, arXiv:1904.09751); min-p (Nguyen et al. 2024, arXiv:2407.01082);
// typical (Meister et al. 2022, arXiv:2202.00666); repetition penalty (Keskar
// et al. 2019, CTRL: logit / p if logit > 0 else logit * p, over prompt and
// output tokens, as Hugging Face applies it); presence and frequency penalties
// as the OpenAI API defines them (logit -= presence * [count > 0] + frequency
// * count, over output tokens). Temperature 0 is greedy (lowest id on ties).
//
// Randomness is counter-based: the uniform draw for a token is a hash of the
// sequence's seed and the token's position, so a seeded request produces the
// same tokens whatever else is batched with it and however its prompt was split.
//
// Cost per token: O(V) passes plus selection (nth_element) of the top-k or of
// a growing nucleus; the vocabulary is never fully sorted unless typical
// sampling runs without top-k / top-p.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tessera/sampling_params.h"
#include "tessera/status.h"

namespace tessera {

class Sampler {
 public:
  // `params` must have passed validate(). `prompt` feeds the repetition penalty.
  explicit Sampler(const SamplingParams& params, std::span<const int32_t> prompt = {});

  // Picks a token from logits[n_vocab] for sequence position `position`.
  // Tokens in `suppressed` get probability 0 (EOS before min_tokens).
  // Errors (kInvalidArgument): NaN or +Inf in the logits, or no token left
  // with non-zero probability.
  Result<int32_t> sample(std::span<const float> logits, int64_t position, std::span<const int32_t> suppressed = {});

  // The processed distribution p of one position, for speculative
  // verification (speculative.h): prepare() runs every processor of sample()
  // on `logits` (same errors) and keeps the candidates; then draw(u) is the
  // token sample() would return for the uniform number u (inverse CDF in
  // candidate order, so sample() == draw(uniform(seed, position))), and
  // candidates() lists (id, p) with p normalised to sum 1. Greedy (temperature
  // 0): one candidate, the argmax, with p = 1. Valid until the next call.
  Status prepare(std::span<const float> logits, std::span<const int32_t> suppressed = {});
  int32_t draw(double u) const;
  struct Prob {
    int32_t id;
    double p;
  };
  std::vector<Prob> candidates() const;
  // The request's seed for this sequence (after choice_seed).
  uint64_t seed() const { return params_.seed; }
  // Temperature 0: every draw is the argmax.
  bool greedy() const { return params_.temperature <= 0; }

  // Records a generated token for the penalties.
  void accept(int32_t token);

  // The uniform number in [0, 1) used for (seed, position).
  static double uniform(uint64_t seed, int64_t position);

 private:
  struct Candidate {
    int32_t id;
    float logit;  // after bias, penalties and temperature
    double p;     // unnormalised probability exp(logit - max)
  };
  void apply_penalties(std::vector<float>& logits) const;
  void select_top_k(size_t k);
  void truncate_top_p();
  void apply_typical();

  SamplingParams params_;
  std::unordered_set<int32_t> seen_;                 // prompt and output tokens (repetition penalty)
  std::unordered_map<int32_t, int32_t> out_counts_;  // output token -> count (presence / frequency)
  std::vector<float> work_;                          // [n_vocab] processed logits
  std::vector<Candidate> cand_;                      // candidates, sorted by logit when sorted_
  double total_ = 0;                                 // sum of cand_[].p after prepare()
  bool sorted_ = false;
};

// Index of the largest value; the lowest index on ties.
int32_t argmax(std::span<const float> logits);

// Stream seed of choice `index` of a request with n > 1 completions.
uint64_t choice_seed(uint64_t seed, int32_t index);

}  // namespace tessera
