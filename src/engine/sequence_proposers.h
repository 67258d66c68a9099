// SequenceProposers: a BatchProposer made of one Proposer per sequence (the
// n-gram prompt lookup, or a test's ProposerFactory), each asked in turn.
// A proposer is made on a sequence's first proposal and dropped when it
// ends; a preemption keeps it (its state is a function of the tokens alone).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "engine/proposer.h"

namespace tessera {

class SequenceProposers final : public BatchProposer {
 public:
  explicit SequenceProposers(ProposerFactory factory) : factory_(std::move(factory)) {}

  void propose(std::span<ProposeItem> items) override;
  void preempted(uint64_t) override {}
  void finished(uint64_t seq_id) override { proposers_.erase(seq_id); }

 private:
  ProposerFactory factory_;
  std::unordered_map<uint64_t, std::unique_ptr<Proposer>> proposers_;
};

}  // namespace tessera
