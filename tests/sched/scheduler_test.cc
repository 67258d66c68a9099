// Scheduler unit tests on pure host data: no model, no KV memory.
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>

namespace tessera {
namespace {

struct Fixture {
  KvCacheManager kv;
  Scheduler sched;
  std::vector<std::unique_ptr<std::vector<int32_t>>> token_lists;
  std::vector<std::unique_ptr<SeqSlot>> slots;
  uint64_t arrivals = 0;

  Fixture(int32_t blocks, SchedulerConfig cfg, bool prefix = true) : kv(blocks, 4, prefix), sched(cfg, kv) {}

  SeqSlot* add(int prompt_len, int max_new, int priority = 0, int first_token = 0) {
    auto toks = std::make_unique<std::vector<int32_t>>(static_cast<size_t>(prompt_len));
    std::iota(toks->begin(), toks->end(), first_token);
    slots.push_back(std::make_unique<SeqSlot>(slots.size(), priority, arrivals++, toks.get(), prompt_len + max_new, 4));
    token_lists.push_back(std::move(toks));
    EXPECT_TRUE(sched.add(slots.back().get()).ok());
    return slots.back().get();
  }
  // Runs a step: scheduled sequences that needed logits get one new token.
  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    sched.on_step_done(out);
    for (const auto& item : out.scheduled) {
      if (item.needs_logits) const_cast<std::vector<int32_t>*>(item.seq->tokens)->push_back(7);
    }
    return out;
  }
  int32_t count_for(const SchedulerOutput& out, const SeqSlot* s) {
    for (const auto& i : out.scheduled) {
      if (i.seq == s) return i.num_new_tokens;
    }
    return 0;
  }
};

// A sequence that generates nothing (max_tokens 0) is admitted when its
// prompt fills the whole cache (it waited forever before: admission kept a
// slot for a next token); one that generates is admitted with a slot for its
// first token (and refused by add when that can never fit:
// RefusesRequestsThatCanNeverFit).
TEST(Scheduler, PromptFillingTheCacheIsAdmittedOnlyWhenNothingIsGenerated) {
  {
    Fixture f(4, {8, 64, 64});  // 4 blocks of 4: 16 slots
    SeqSlot* a = f.add(16, 0);
    const auto out = f.step();
    ASSERT_EQ(out.scheduled.size(), 1u);
    EXPECT_EQ(f.count_for(out, a), 16);
    EXPECT_TRUE(out.scheduled[0].needs_logits);
  }
  {
    Fixture f(5, {8, 64, 64});  // 20 slots: a 16-token prompt plus one fits
    SeqSlot* a = f.add(16, 1);
    EXPECT_EQ(f.count_for(f.step(), a), 16);
  }
  {
    Fixture f(4, {8, 64, 64});
    SeqSlot* a = f.add(15, 1);  // 15 + 1 fills the cache exactly: admitted
    EXPECT_EQ(f.count_for(f.step(), a), 15);
  }
}

TEST(Scheduler, ChunksPromptsWithinTheTokenBudget) {
  Fixture f(64, {8, 10, 256});
  SeqSlot* a = f.add(25, 4);
  auto out = f.step();
  EXPECT_EQ(f.count_for(out, a), 10);
  EXPECT_FALSE(out.scheduled[0].needs_logits);
  out = f.step();
  EXPECT_EQ(f.count_for(out, a), 10);
  out = f.step();
  EXPECT_EQ(f.count_for(out, a), 5);  // last chunk: logits, then a token is sampled
  EXPECT_TRUE(out.scheduled[0].needs_logits);
  EXPECT_EQ(a->num_tokens(), 26);
  out = f.step();
  EXPECT_EQ(f.count_for(out, a), 1);  // decode
}

TEST(Scheduler, DecodesFirstThenPrefillsInArrivalOrder) {
  Fixture f(64, {8, 6, 256});
  SeqSlot* a = f.add(3, 8);
  f.step();  // a prefilled
  SeqSlot* b = f.add(4, 8);
  SeqSlot* c = f.add(4, 8);
  auto out = f.step();
  ASSERT_EQ(out.scheduled.size(), 3u);
  EXPECT_EQ(out.scheduled[0].seq, a);  // decode first
  EXPECT_EQ(f.count_for(out, a), 1);
  EXPECT_EQ(f.count_for(out, b), 4);
  EXPECT_EQ(f.count_for(out, c), 1);  // what is left of the budget: a chunk of c
  EXPECT_EQ(out.num_tokens, 6);
}

TEST(Scheduler, PriorityOrdersTheQueue) {
  Fixture f(64, {8, 4, 256});
  SeqSlot* low = f.add(4, 2, /*priority=*/5);
  SeqSlot* high = f.add(4, 2, /*priority=*/0);
  auto out = f.step();
  EXPECT_EQ(f.count_for(out, high), 4);
  EXPECT_EQ(f.count_for(out, low), 0);
}

TEST(Scheduler, CapsRunningSequences) {
  Fixture f(64, {2, 100, 256});
  f.add(2, 4);
  f.add(2, 4);
  SeqSlot* c = f.add(2, 4);
  auto out = f.step();
  EXPECT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(f.count_for(out, c), 0);
  EXPECT_EQ(f.sched.num_running(), 2);
  EXPECT_EQ(f.sched.num_waiting(), 1);
}

TEST(Scheduler, RefusesRequestsThatCanNeverFit) {
  Fixture f(4, {8, 64, 100});  // 4 blocks of 4 tokens
  std::vector<int32_t> toks(10);
  SeqSlot too_long(1, 0, 0, &toks, 101, 4);
  EXPECT_EQ(f.sched.add(&too_long).code(), StatusCode::kOutOfRange);
  SeqSlot too_big(2, 0, 1, &toks, 17, 4);  // 5 blocks
  EXPECT_EQ(f.sched.add(&too_big).code(), StatusCode::kOutOfRange);
  SeqSlot fits(3, 0, 2, &toks, 16, 4);
  EXPECT_TRUE(f.sched.add(&fits).ok());
}

TEST(Scheduler, PreemptsTheMostRecentLowestPriorityAndRecovers) {
  // 5 blocks of 4 tokens; each sequence grows to 12 tokens (3 blocks): both cannot run at once.
  Fixture f(5, {8, 64, 256}, /*prefix=*/true);
  SeqSlot* a = f.add(5, 7, 0, 0);
  SeqSlot* b = f.add(5, 7, 0, 100);
  int64_t preemptions = 0;
  SeqSlot* first_victim = nullptr;
  for (int i = 0; i < 40 && (a->num_tokens() < 12 || b->num_tokens() < 12); ++i) {
    auto out = f.step();
    if (!out.preempted.empty() && first_victim == nullptr) first_victim = out.preempted[0];
    preemptions += static_cast<int64_t>(out.preempted.size());
    for (SeqSlot* s : {a, b}) {
      if (s->num_tokens() >= 12 && s->status == SeqStatus::kRunning) f.sched.finish(s);
    }
    EXPECT_TRUE(f.kv.check_invariants());
  }
  EXPECT_EQ(a->num_tokens(), 12);
  EXPECT_EQ(b->num_tokens(), 12);
  EXPECT_GE(preemptions, 1);
  EXPECT_EQ(first_victim, b);  // the most recently admitted
  EXPECT_EQ(f.kv.num_used(), 0);
}

// Pipeline steps in flight (SeqSlot::in_flight): such a sequence is not
// scheduled, and one whose preemption victim is in flight waits for it.
TEST(Scheduler, InFlightSequencesAreSkippedAndNeverPreempted) {
  // 4 blocks of 4 tokens: two 7-token prompts and their first decode fill
  // them; the ninth token of either needs a fifth.
  Fixture f(4, {8, 64, 256}, /*prefix=*/false);
  SeqSlot* a = f.add(7, 4, 0, 0);
  SeqSlot* b = f.add(7, 4, 0, 100);
  auto out = f.step();
  ASSERT_EQ(out.scheduled.size(), 2u);
  out = f.step();
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(f.kv.num_available(), 0);
  b->in_flight = true;
  out = f.sched.schedule();
  EXPECT_TRUE(out.scheduled.empty());  // a's victim would be b, which is in flight: a waits
  EXPECT_TRUE(out.preempted.empty());
  EXPECT_EQ(b->status, SeqStatus::kRunning);
  b->in_flight = false;
  out = f.sched.schedule();
  ASSERT_EQ(out.preempted.size(), 1u);
  EXPECT_EQ(out.preempted[0], b);
  EXPECT_EQ(f.count_for(out, a), 1);
  f.sched.on_step_done(out);
  EXPECT_TRUE(f.kv.check_invariants());
}

TEST(Scheduler, CapsTheSequencesOfOneStep) {
  Fixture f(64, {8, 64, 256});
  SeqSlot* a = f.add(3, 4, 0, 0);
  SeqSlot* b = f.add(3, 4, 0, 100);
  SeqSlot* c = f.add(3, 4, 0, 200);
  auto out = f.sched.schedule(2);
  ASSERT_EQ(out.scheduled.size(), 2u);
  EXPECT_EQ(f.count_for(out, a), 3);
  EXPECT_EQ(f.count_for(out, b), 3);
  a->in_flight = b->in_flight = true;  // as rank 0 leaves them while their step is in flight
  const auto next = f.sched.schedule(2);
  ASSERT_EQ(next.scheduled.size(), 1u);
  EXPECT_EQ(f.count_for(next, c), 3);
}

TEST(Scheduler, AdmissionWaitsForMemoryWithoutPreempting) {
  Fixture f(4, {8, 64, 256});
  SeqSlot* a = f.add(10, 2);  // 3 blocks
  f.step();
  SeqSlot* b = f.add(6, 2, 0, 100);  // needs 2 blocks (7 tokens), only 1 free
  auto out = f.step();
  EXPECT_EQ(f.count_for(out, b), 0);
  EXPECT_TRUE(out.preempted.empty());
  f.sched.finish(a);
  out = f.step();
  EXPECT_EQ(f.count_for(out, b), 6);
  EXPECT_TRUE(f.kv.check_invariants());
}

TEST(Scheduler, PrefixCacheSkipsComputedBlocks) {
  Fixture f(32, {8, 64, 256});
  SeqSlot* a = f.add(13, 1);
  f.step();
  f.sched.finish(a);
  SeqSlot* b = f.add(13, 1);  // same tokens
  auto out = f.step();
  EXPECT_EQ(b->num_cached, 12);
  EXPECT_EQ(f.count_for(out, b), 1);  // only the last prompt token is computed
}

}  // namespace
}  // namespace tessera
