// DraftModelProposer: speculative decoding with a second, smaller model of
// the same vocabulary (Leviathan et al. 2023, arXiv:2211.17192; Chen et al.
// 2023, arXiv:2302.01318). The draft runs on its own ModelExecutor (backend,
// prepared weights, KV memory) with its own paged KV cache: a KvCacheManager
// (no prefix cache) whose block tables, one per sequence, hold the tokens the
// draft has computed.
//
// One step (propose): every speculating sequence first catches up — the
// tokens the draft has not seen yet (its whole prompt the first time; after a
// verification, the tokens past the longest prefix the draft computed that
// the sequence kept) — and the last row's logits give draft position 0; then
// each further position feeds the token just drawn. All sequences share one
// ragged forward call per draft position (k calls for k tokens). Before a
// call, blocks for the proposal are allocated; afterwards the table is cut to
// the tokens computed, so rejected draft tokens are rolled back at the next
// step by truncating to what the sequence accepted. A sequence whose blocks
// cannot be had proposes nothing this step.
//
// q_i is the draft's logits after the request's own processors (a copy of
// the sequence's Sampler: bias, penalties including the tokens drafted before
// position i, temperature, top-k, top-p, min-p, typical); token i is
// draw(uniform(draft_seed(seed), position)), a stream independent of the
// verification's uniforms and a function of (seed, choice, position) only, so
// seeded runs repeat. When every q_i is one-hot (greedy requests: the argmax)
// the proposal is deterministic (Proposal::q empty).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/model_executor.h"
#include "engine/proposer.h"
#include "kv/kv_cache_manager.h"
#include "model/model.h"
#include "tessera/backend_options.h"

namespace tessera {

struct DraftProposerConfig {
  BackendOptions backend;  // threads set
  KvDtype kv_dtype = KvDtype::kF16;
  int64_t kv_tokens = 4096;  // the draft KV cache's capacity in tokens (rounded up to whole blocks)
};

// ok when `draft` can propose for `target`: the same vocabulary size and
// every token's text equal (when neither has a tokenizer, the size alone).
// kInvalidArgument naming both files and the first difference otherwise, or
// the one that has no tokenizer when the other has.
Status check_same_vocab(const Model& target, const Model& draft);

class DraftModelProposer final : public BatchProposer {
 public:
  // Borrows `draft` (it outlives the proposer). Errors: check_same_vocab's,
  // the draft executor's (weights, KV allocation).
  static Result<std::unique_ptr<DraftModelProposer>> create(const Model& target, const Model& draft,
                                                            const DraftProposerConfig& config);

  void propose(std::span<ProposeItem> items) override;
  void preempted(uint64_t seq_id) override { drop(seq_id); }
  void finished(uint64_t seq_id) override { drop(seq_id); }
  bool runs_model() const override { return true; }

  // Draft KV accounting, for tests: every block referenced exactly by the
  // tables of the sequences it tracks, each table holding the blocks of its
  // computed tokens. kInternal naming the first violation.
  Status check_invariants() const override;
  int32_t num_free_blocks() const { return kv_.num_available(); }
  int32_t num_blocks() const { return kv_.num_blocks(); }
  int32_t num_tracked() const { return static_cast<int32_t>(states_.size()); }
  // Milliseconds spent in the draft's forward calls, and their count.
  double forward_ms() const { return forward_ms_; }
  int64_t forward_calls() const { return forward_calls_; }

 private:
  struct State {
    explicit State(int32_t block_size) : table(block_size) {}
    BlockTable table;
    int64_t synced = 0;        // tokens of the sequence the draft computed (known equal)
    std::vector<int32_t> fed;  // drafted tokens computed after them (positions synced..)
  };
  DraftModelProposer(const Model& draft, std::unique_ptr<ModelExecutor> executor);
  void drop(uint64_t seq_id);

  const Model& draft_;
  std::unique_ptr<ModelExecutor> executor_;
  KvCacheManager kv_;
  std::unordered_map<uint64_t, State> states_;
  double forward_ms_ = 0;
  int64_t forward_calls_ = 0;
};

}  // namespace tessera
