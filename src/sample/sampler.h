// Sampler: turns one row of logits into the next token. Processors run in a
// fixed order: temperature -> top-k -> top-p -> min-p -> sample
// (p_i = exp(z_i / T) / sum_j exp(z_j / T); top-p is nucleus sampling,
// Holtzman et al. 2019, arXiv:1904.09751; min-p, Nguyen et al. 2024,
// arXiv:2407.01082). Temperature 0 is greedy (lowest id on ties).
//
// Randomness is counter-based: the uniform draw for a token is a hash of the
// request's seed and the token's position, so a seeded request produces the
// same tokens whatever else is batched with it and however its prompt was split.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sample/sampling_params.h"

namespace tessera {

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params) : params_(params) {}

  // Picks a token from logits[n_vocab] for sequence position `position`.
  int32_t sample(std::span<const float> logits, int64_t position);

  // The uniform number in [0, 1) used for (seed, position).
  static double uniform(uint64_t seed, int64_t position);

 private:
  SamplingParams params_;
  std::vector<std::pair<float, int32_t>> candidates_;  // [n_vocab] (value, token id)
};

// Index of the largest value; the lowest index on ties.
int32_t argmax(std::span<const float> logits);

}  // namespace tessera
