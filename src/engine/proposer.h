// Proposer: where the draft tokens of speculative decoding come from (Leviathan
// et al. 2023, arXiv:2211.17192; Chen et al. 2023, arXiv:2302.01318). The
// engine keeps one Proposer per speculating sequence; before a decode step it
// asks for up to k tokens to follow the sequence, and the target model scores
// them (plus one bonus position) in that step's forward pass
// (docs/architecture.md, "Speculative decoding").
//
// A proposer is deterministic (q is one-hot at each proposed token: n-gram
// prompt lookup) or random (it drew token i from a distribution q_i it
// returns). Verification (speculative.h) is exact for either, provided a
// random proposer's draws are independent of the engine's own uniforms.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "sample/sampler.h"

namespace tessera {

struct Proposal {
  std::vector<int32_t> tokens;  // [m] proposed tokens, m <= k; empty: no proposal this step
  // [m * n_vocab] q_i over the vocabulary for each proposed token (rows sum
  // to 1; tokens[i] drawn from row i); empty for a deterministic proposer.
  std::vector<float> q;
  void clear() {
    tokens.clear();
    q.clear();
  }
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Proposes up to k tokens to follow `tokens` (the sequence's prompt and
  // accepted output; between calls it only grows). `position` of the first
  // proposed token is tokens.size(). Writes `out` (cleared first).
  virtual void propose(std::span<const int32_t> tokens, int32_t k, Proposal& out) = 0;
};

// Makes the proposer of one sequence: (request seed after choice_seed, choice).
using ProposerFactory = std::function<std::unique_ptr<Proposer>(uint64_t seed, int32_t choice)>;

// One speculating sequence of a step, as the engine hands it to a BatchProposer.
struct ProposeItem {
  uint64_t seq_id = 0;               // stable for the sequence's life (the scheduler's SeqSlot id)
  std::span<const int32_t> tokens;   // prompt + accepted output; between calls it only grows
  int32_t k = 0;                     // tokens to propose at most (>= 1)
  const Sampler* sampler = nullptr;  // the sequence's sampler: its processors, penalty state and seed
  int32_t choice = 0;
  Proposal* out = nullptr;  // written (cleared first); at most k tokens
};

// The engine's view of speculation: called once per step with every
// sequence that speculates in it, so a proposer that runs a model can batch
// all of them (the draft model: one forward call per draft position).
// Sequences it has state for are named by seq_id; the engine tells it when
// a sequence is preempted (its recomputation starts from scratch) or ends.
class BatchProposer {
 public:
  virtual ~BatchProposer() = default;
  virtual void propose(std::span<ProposeItem> items) = 0;
  // The sequence was preempted (its KV recomputed on resume): drop state
  // that depends on it, e.g. draft KV blocks.
  virtual void preempted(uint64_t seq_id) = 0;
  // The sequence finished or was cancelled: drop all its state.
  virtual void finished(uint64_t seq_id) = 0;
  // Its own block accounting between steps (EngineCore::check_invariants);
  // kInternal naming the first violation.
  virtual Status check_invariants() const { return {}; }
  // Whether proposing costs a model's forward calls (the draft model): the
  // cost-aware switch then decides how many tokens to ask for before
  // proposing; a cheap proposer (n-gram lookup) proposes first and the
  // switch trims what it proposed.
  virtual bool runs_model() const { return false; }
};

}  // namespace tessera
