// Scheduler: each step decides, within a token budget and a cap on running
// sequences, how many new tokens every sequence computes — decode tokens of
// running sequences first, then chunks of waiting prompts (chunked prefill) in
// priority and arrival order. Its output is {sequence -> number of new tokens};
// prefill, decode and chunks are all just counts (vLLM v1's scheduler
// interface). Admission (does a waiting sequence's prompt fit in KV memory) is
// decided separately from batch composition (which tokens run this step).
// When a running sequence needs a block and none is free, the running
// sequence with the lowest priority, most recently admitted, is preempted by
// recomputation: its blocks are released (full ones stay in the prefix cache)
// and it returns to the queue. The oldest highest-priority sequence always
// makes progress, so there is no deadlock or livelock. A decoding sequence
// with proposed tokens (speculative decoding) also gets rows for them, within
// the budget and the free blocks (they never cause a preemption). A sequence
// in a step still in flight (SeqSlot::in_flight, pipeline parallelism) is
// skipped, and never preempted: a sequence whose victim is in flight waits
// for that step instead. Pure host logic.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/seq_slot.h"
#include "tessera/status.h"

namespace tessera {

struct SchedulerConfig {
  int32_t max_num_seqs = 64;             // running sequences at most
  int32_t max_num_batched_tokens = 512;  // tokens per step at most
  int64_t max_model_len = 4096;          // prompt + output of one sequence at most
};

struct ScheduledSeq {
  SeqSlot* seq;
  int32_t num_new_tokens;  // tokens [num_computed, num_computed + num_new_tokens) run this step
  bool needs_logits;       // the chunk reaches the sequence's last token: sample after it
  // Proposed tokens verified after the decode token (positions num_tokens..),
  // <= seq->num_spec; their K/V is written but num_computed does not count
  // them until commit_spec().
  int32_t num_spec_tokens = 0;
};

struct SchedulerOutput {
  std::vector<ScheduledSeq> scheduled;
  std::vector<SeqSlot*> preempted;  // this step
  int32_t num_tokens = 0;
};

class Scheduler {
 public:
  // Borrows `kv`, which owns the block accounting.
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv);

  // Queues a sequence. Refuses (kInvalidArgument / kOutOfRange) one that can
  // never fit: max_total_tokens beyond max_model_len or the whole cache.
  Status add(SeqSlot* seq);
  // One step: at most `max_seqs` sequences (rank 0 under pipeline
  // parallelism shares the sequences among the steps in flight).
  SchedulerOutput schedule(int32_t max_seqs = INT32_MAX);
  // Advances num_computed by the scheduled counts and registers full blocks
  // in the prefix cache.
  void on_step_done(const SchedulerOutput& out);
  // Removes a finished or cancelled sequence and frees its blocks.
  void finish(SeqSlot* seq);
  // After verification of a step's proposed tokens: the first `accepted` of
  // them (now the sequence's tokens) count as computed, their full blocks
  // join the prefix cache, and the blocks past num_computed are freed (the
  // rejected positions' K/V is rolled back).
  void commit_spec(SeqSlot* seq, int32_t accepted);

  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int64_t num_preemptions() const { return num_preemptions_; }
  // Prefix-cache lookups counted once per sequence, at its first admission:
  // its prompt tokens, and of those the ones taken from the cache.
  int64_t prefix_query_tokens() const { return prefix_query_tokens_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  void preempt(SeqSlot* seq);
  void enqueue_waiting(SeqSlot* seq);
  // Whether `seq` (after its prefix match) fits in KV memory now: its known
  // tokens plus one to decode, unless max_total_tokens says it generates
  // nothing more (max_tokens 0: a prompt that fills the cache is admitted).
  bool can_admit(const SeqSlot& seq) const;

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::vector<SeqSlot*> running_;  // admission order
  std::deque<SeqSlot*> waiting_;   // priority, then arrival
  int64_t num_preemptions_ = 0;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
};

}  // namespace tessera
