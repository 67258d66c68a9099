// The cost-aware switch of speculative decoding: each step the engine picks
// one lookahead cap for all speculating sequences, the one that maximises the
// step's goodput — expected emitted tokens per millisecond — from measured
// step times and each sequence's measured acceptance (SmartSpec: Liu et al.
// 2024, "Optimizing Speculative Decoding for Serving Large Language Models
// Using Goodput", arXiv:2406.14066; the expected length is Leviathan et al.
// 2023, arXiv:2211.17192, eq. 1). A cap of 0 turns speculation off for the
// step. Whatever cap is chosen the output is unchanged (verification is exact
// for any number of proposals); only speed depends on it.
//
// Pure host logic, engine thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace tessera {

// Milliseconds of a forward call as a function of its rows (tokens), learnt
// from measurements: an exponential moving average per row count. Between
// measured row counts the estimate interpolates linearly; below the smallest
// it scales the smallest's by rows / smallest, above the largest it is the
// largest's — both optimistic, so an unmeasured step (a one-row step after a
// prefill, a larger verification) is tried once and then known.
class StepTimeModel {
 public:
  // Row counts above this share the last bucket.
  static constexpr int64_t kMaxRows = 1024;
  // Weight of a new measurement in the moving average.
  static constexpr double kSmoothing = 0.25;

  // rows >= 1, ms >= 0 (others are ignored).
  void observe(int64_t rows, double ms);
  // Estimated ms of a forward call of `rows` rows; 0 before any measurement.
  double estimate(int64_t rows) const;
  bool empty() const { return measured_.empty(); }

 private:
  std::vector<double> ms_;         // [kMaxRows + 1] the average per row count (index = rows)
  std::vector<int64_t> measured_;  // row counts with a measurement, ascending
};

// Expected tokens one verification emits when m proposals are scored and each
// is accepted with probability alpha given the earlier ones were:
// 1 + alpha + ... + alpha^m = (1 - alpha^(m+1)) / (1 - alpha). m = 0: 1.
double expected_emitted_tokens(double alpha, int32_t m);

// A speculating sequence as the goodput choice sees it.
struct SpecCandidate {
  double alpha = 0;        // its acceptance estimate, in [0, 1]
  int32_t max_tokens = 0;  // proposals it can take this step (its lookahead, or the proposal's length)
};

// The cap c in [0, max over max_tokens] maximising
//   (other_rows + sum_i E(alpha_i, min(c, max_tokens_i)))
//   / (step_ms(other_rows + n + sum_i min(c, max_tokens_i)) + draft_ms(c))
// where n = seqs.size() (each speculating sequence has its own token row too)
// and other_rows counts the step's rows of non-speculating sequences (each
// emits one token). draft_ms(c): the cost of proposing c tokens per sequence
// (0 for a proposer that has already proposed). Ties go to the smaller cap.
// Before step_ms has any measurement the largest cap is returned (explore).
int32_t choose_lookahead_cap(std::span<const SpecCandidate> seqs, int64_t other_rows, const StepTimeModel& step_ms,
                             const std::function<double(int32_t)>& draft_ms);

// A sequence's acceptance estimate: an exponential moving average over
// proposal outcomes (1 accepted, 0 rejected), each proposal given the
// earlier ones of its run were accepted.
class AcceptanceEstimate {
 public:
  static constexpr double kPrior = 0.5;
  static constexpr double kSmoothing = 0.2;
  // A verification (or, for a deterministic proposer, a comparison with the
  // tokens the sequence went on to emit) of `proposed` tokens of which the
  // first `accepted` were accepted; a rejection is counted when
  // accepted < proposed.
  void observe(int32_t proposed, int32_t accepted);
  double value() const { return alpha_; }

 private:
  double alpha_ = kPrior;
};

}  // namespace tessera
