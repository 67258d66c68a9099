#include "engine/sequence_proposers.h"

namespace tessera {

void SequenceProposers::propose(std::span<ProposeItem> items) {
  for (ProposeItem& item : items) {
    auto it = proposers_.find(item.seq_id);
    if (it == proposers_.end()) it = proposers_.emplace(item.seq_id, factory_(item.sampler->seed(), item.choice)).first;
    it->second->propose(item.tokens, item.k, *item.out);
  }
}

}  // namespace tessera
