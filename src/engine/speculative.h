// Exact verification of proposed tokens (speculative sampling: Leviathan et
// al. 2023, arXiv:2211.17192, Algorithm 1; Chen et al. 2023,
// arXiv:2302.01318). For one position, with p the target's distribution after
// the request's processors (Sampler::prepare) and x the proposed token drawn
// from q:
//   accept x with probability min(1, p(x) / q(x)); on rejection draw from
//   normalize(max(0, p - q)); at the bonus position (every proposal accepted)
//   draw from p.
// The emitted token is then distributed exactly as p. For a deterministic
// proposer (q one-hot at x) this is the same as drawing t from p with the
// position's own uniform number and accepting x iff t == x: P(accept) = p(x),
// and a rejected position's token is p restricted to t != x, which is
// normalize(max(0, p - q)). So a seeded request draws the very tokens it
// would draw without speculation, and greedy reduces to "keep the proposals
// equal to the argmax".
//
// Randomness is a function of (seed, position) only: the draw uses
// Sampler::uniform(seed, position) as sample() does; the acceptance test of a
// random proposer uses a second stream, uniform(acceptance_seed(seed), position).
#pragma once

#include <cstdint>
#include <span>

#include "sample/sampler.h"

namespace tessera {

// The seed of the acceptance-test stream of a sequence with seed `seed`.
uint64_t acceptance_seed(uint64_t seed);
// The seed of the stream a random proposer (the draft model) draws its
// tokens with: independent of the draw and acceptance streams.
uint64_t draft_seed(uint64_t seed);

// The token emitted at `position`. `sampler` has prepare()d this position's
// logits. `proposed`: the proposal at this position, or -1 for the bonus
// position. `q`: [n_vocab] the proposer's distribution (empty: one-hot at
// `proposed`). The proposal is accepted iff the returned token equals it.
int32_t verify_position(const Sampler& sampler, int32_t proposed, std::span<const float> q, int64_t position);

}  // namespace tessera
