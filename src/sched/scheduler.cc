#include "sched/scheduler.h"

#include <algorithm>
#include <string>

namespace tessera {

namespace {
// True when a should run before b.
bool before(const SeqSlot* a, const SeqSlot* b) {
  return a->priority < b->priority || (a->priority == b->priority && a->arrival < b->arrival);
}
}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv) : config_(config), kv_(kv) {}

Status Scheduler::add(SeqSlot* seq) {
  if (seq->max_total_tokens > config_.max_model_len) {
    return out_of_range("the prompt plus max_tokens is " + std::to_string(seq->max_total_tokens) +
                        " tokens, more than the context length " + std::to_string(config_.max_model_len));
  }
  const int64_t blocks = (seq->max_total_tokens + kv_.block_size() - 1) / kv_.block_size();
  if (blocks > kv_.num_blocks()) {
    return out_of_range("the prompt plus max_tokens needs " + std::to_string(blocks) + " KV blocks but the cache has " +
                        std::to_string(kv_.num_blocks()));
  }
  seq->status = SeqStatus::kWaiting;
  enqueue_waiting(seq);
  return {};
}

void Scheduler::enqueue_waiting(SeqSlot* seq) {
  auto pos = std::upper_bound(waiting_.begin(), waiting_.end(), seq, before);
  waiting_.insert(pos, seq);
}

bool Scheduler::can_admit(const SeqSlot& seq) const {
  const bool may_generate = seq.num_tokens() < seq.max_total_tokens;
  return kv_.blocks_needed(seq.table, seq.num_tokens() + (may_generate ? 1 : 0)) <= kv_.num_available();
}

void Scheduler::preempt(SeqSlot* seq) {
  running_.erase(std::find(running_.begin(), running_.end(), seq));
  kv_.release(seq->table);
  seq->block_hashes.clear();
  seq->num_computed = 0;
  seq->status = SeqStatus::kWaiting;
  ++seq->num_preemptions;
  ++num_preemptions_;
  enqueue_waiting(seq);
}

SchedulerOutput Scheduler::schedule(int32_t max_seqs) {
  SchedulerOutput out;
  int64_t budget = config_.max_num_batched_tokens;
  auto room = [&] { return budget > 0 && static_cast<int32_t>(out.scheduled.size()) < max_seqs; };
  // 1. Running sequences, in admission order: a decode token, or the next chunk.
  for (size_t i = 0; i < running_.size() && room();) {
    SeqSlot* s = running_[i];
    const int64_t n = std::min(s->num_tokens() - s->num_computed, budget);
    if (n <= 0 || s->in_flight) {
      ++i;
      continue;
    }
    // Free blocks by preempting the lowest-priority, most recently admitted
    // sequence not yet scheduled this step (possibly s itself); when that one
    // is in flight, s waits for its step rather than preempting another.
    bool preempted_self = false, wait = false;
    while (kv_.blocks_needed(s->table, s->num_computed + n) > kv_.num_available()) {
      auto victim = std::max_element(running_.begin() + static_cast<std::ptrdiff_t>(i), running_.end(),
                                     [](const SeqSlot* a, const SeqSlot* b) { return before(a, b); });
      SeqSlot* v = *victim;
      if (v->in_flight) {
        wait = true;
        break;
      }
      out.preempted.push_back(v);
      preempt(v);
      if (v == s) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) continue;  // running_[i] is now the next sequence
    if (wait) {
      ++i;
      continue;
    }
    (void)kv_.allocate(s->table, s->num_computed + n);  // cannot fail: checked above
    out.scheduled.push_back({s, static_cast<int32_t>(n), s->num_computed + n == s->num_tokens(), 0});
    budget -= n;
    ++i;
  }
  // 1b. Proposed tokens ride along with decode tokens, as many as the budget
  // and the blocks left free allow (after every running sequence got its own
  // tokens, so they never cause a preemption).
  for (ScheduledSeq& item : out.scheduled) {
    SeqSlot* s = item.seq;
    if (budget <= 0) break;
    if (s->num_spec <= 0 || s->num_tokens() - s->num_computed != 1) continue;
    const int64_t end = s->num_computed + item.num_new_tokens;
    int64_t spec = std::min<int64_t>(s->num_spec, budget);
    while (spec > 0 && kv_.blocks_needed(s->table, end + spec) > kv_.num_available()) --spec;
    if (spec == 0) continue;
    (void)kv_.allocate(s->table, end + spec);  // cannot fail: checked above
    item.num_spec_tokens = static_cast<int32_t>(spec);
    budget -= spec;
  }
  // 2. Waiting sequences, while nothing was preempted this step.
  while (out.preempted.empty() && !waiting_.empty() && room() &&
         static_cast<int32_t>(running_.size()) < config_.max_num_seqs) {
    SeqSlot* s = waiting_.front();
    if (s->use_prefix_cache && s->table.blocks().empty() && s->num_computed == 0) {
      s->num_computed = kv_.match_prefix(*s->tokens, s->table, s->block_hashes);
    }
    if (!can_admit(*s)) {  // admission: the whole known sequence must fit
      // Do not pin matched prefix blocks while waiting.
      kv_.release(s->table);
      s->block_hashes.clear();
      s->num_computed = 0;
      break;
    }
    const int64_t n = std::min(s->num_tokens() - s->num_computed, budget);
    (void)kv_.allocate(s->table, s->num_computed + n);
    waiting_.pop_front();
    running_.push_back(s);
    s->status = SeqStatus::kRunning;
    if (!s->ever_scheduled) {
      // The prefix-cache counters see each prompt once, at its first
      // admission: not the lookups of steps it was refused in, nor the
      // re-admission after a preemption (which may hit its own blocks).
      s->num_cached = s->num_computed;
      if (s->use_prefix_cache && kv_.prefix_cache_enabled()) {
        prefix_query_tokens_ += s->num_tokens();
        prefix_hit_tokens_ += s->num_computed;
      }
    }
    s->ever_scheduled = true;
    out.scheduled.push_back({s, static_cast<int32_t>(n), s->num_computed + n == s->num_tokens(), 0});
    budget -= n;
  }
  out.num_tokens = static_cast<int32_t>(config_.max_num_batched_tokens - budget);
  return out;
}

void Scheduler::on_step_done(const SchedulerOutput& out) {
  for (const ScheduledSeq& item : out.scheduled) {
    SeqSlot* s = item.seq;
    if (s->status != SeqStatus::kRunning) continue;
    s->num_computed += item.num_new_tokens;
    kv_.cache_full_blocks(*s->tokens, s->num_computed, s->table, s->block_hashes);
  }
}

void Scheduler::commit_spec(SeqSlot* seq, int32_t accepted) {
  if (seq->status != SeqStatus::kRunning) return;
  seq->num_computed += accepted;
  kv_.cache_full_blocks(*seq->tokens, seq->num_computed, seq->table, seq->block_hashes);
  kv_.truncate(seq->table, seq->num_computed);
}

void Scheduler::finish(SeqSlot* seq) {
  if (seq->status == SeqStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), seq));
  } else if (seq->status == SeqStatus::kWaiting) {
    auto it = std::find(waiting_.begin(), waiting_.end(), seq);
    if (it != waiting_.end()) waiting_.erase(it);
  }
  kv_.release(seq->table);
  seq->block_hashes.clear();
  seq->status = SeqStatus::kFinished;
}

}  // namespace tessera
