// EngineMetrics against scripted workloads on stories260K whose counts are
// known in advance: prefix-cache queries and hits count each prompt once per
// admission (not the steps a prompt waited through, nor its re-admission
// after a preemption), a one-token prompt chunk is prefill, cancelled
// requests are not successes, and the step / decode counters follow the
// schedule the scheduler's rules give (worked out in the comments).
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "engine/engine_core.h"
#include "test_support.h"

namespace tessera {
namespace {

// Token ids 1 (BOS), then `n - 1` ids counting up from `first`.
std::vector<int32_t> ids(int n, int32_t first) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  v[0] = 1;
  std::iota(v.begin() + 1, v.end(), first);
  return v;
}

GenerationOptions greedy(int32_t max_tokens) {
  GenerationOptions o;
  o.max_tokens = max_tokens;
  o.ignore_eos = true;
  o.sampling.temperature = 0;
  return o;
}

class EngineMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok());
    model_ = std::move(m).value();
  }
  // Submits and records the request's final metrics under `name`.
  void submit(EngineCore& e, const std::string& name, std::vector<int32_t> prompt, const GenerationOptions& o) {
    auto id = e.submit(std::move(prompt), o, [this, name](const RequestEvent& ev) {
      if (!ev.request_finished) return;
      EXPECT_TRUE(ev.error.ok()) << ev.error.to_string();
      finished_[name] = *ev.metrics;
      cancelled_[name] = ev.cancelled;
    });
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    ids_[name] = *id;
  }
  static void run(EngineCore& e) {
    while (e.step()) ASSERT_TRUE(e.check_invariants().ok()) << e.check_invariants().to_string();
  }
  std::unique_ptr<Model> model_;
  std::map<std::string, RequestMetrics> finished_;
  std::map<std::string, bool> cancelled_;
  std::map<std::string, uint64_t> ids_;
};

TEST_F(EngineMetricsTest, PrefixHitsOneTokenChunksAndCancels) {
  EngineConfig cfg;
  cfg.ctx_size = 256;
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  EngineCore& e = **engine;
  const auto c = ids(40, 10);
  // 1. C alone: one prefill step (40 tokens, the first token), 3 decode steps.
  submit(e, "c1", c, greedy(4));
  run(e);
  // 2. C again: its 2 full blocks (32 tokens; never the last token) are cached, 8 tokens prefill.
  submit(e, "c2", c, greedy(4));
  run(e);
  // 3. The first 33 tokens of C: 32 cached, a one-token prefill chunk, then 1 decode step.
  submit(e, "d", std::vector<int32_t>(c.begin(), c.begin() + 33), greedy(2));
  run(e);
  EngineMetrics m = e.metrics();
  EXPECT_EQ(m.prefix_query_tokens, 40 + 40 + 33);
  EXPECT_EQ(m.prefix_hit_tokens, 0 + 32 + 32);
  EXPECT_EQ(m.prompt_tokens_computed, 40 + 8 + 1);
  EXPECT_EQ(m.generated_tokens, 4 + 4 + 2);
  EXPECT_EQ(m.steps, 4 + 4 + 2);
  EXPECT_EQ(m.decode_steps, 3 + 3 + 1);
  EXPECT_EQ(m.decode_tokens, 3 + 3 + 1);
  EXPECT_EQ(m.finished_length, 3);
  EXPECT_EQ(m.finished_stop, 0);
  EXPECT_EQ(m.finished_cancelled, 0);
  EXPECT_EQ(m.finished_error, 0);
  EXPECT_EQ(m.preemptions, 0);
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.waiting, 0);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_blocks_free, e.kv_spec().num_blocks);  // cached blocks are evictable, so free
  EXPECT_GT(m.prefill_ms, 0);
  EXPECT_GT(m.decode_ms, 0);
  EXPECT_EQ(m.spec_proposed_tokens, 0);
  EXPECT_EQ(m.spec_accepted_tokens, 0);
  EXPECT_EQ(m.spec_steps, 0);
  EXPECT_EQ(finished_["c1"].cached_tokens, 0);
  EXPECT_EQ(finished_["c2"].cached_tokens, 32);
  EXPECT_EQ(finished_["d"].cached_tokens, 32);
  EXPECT_EQ(finished_["d"].prompt_tokens, 33);
  EXPECT_EQ(finished_["c2"].generated_tokens, 4);
  EXPECT_EQ(finished_["c2"].itl_ms.size(), 3u);

  // 4. A request cancelled after its prefill and 2 decode steps: counted as
  // cancelled only (its 11 prompt tokens were queried at admission).
  submit(e, "x", ids(11, 200), greedy(100));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(e.step());
  e.cancel(ids_["x"]);
  run(e);
  m = e.metrics();
  EXPECT_TRUE(cancelled_["x"]);
  EXPECT_EQ(m.finished_cancelled, 1);
  EXPECT_EQ(m.finished_length, 3);
  EXPECT_EQ(m.finished_stop, 0);
  EXPECT_EQ(m.finished_error, 0);
  EXPECT_EQ(m.prefix_query_tokens, 113 + 11);
  EXPECT_EQ(m.prefix_hit_tokens, 64);
  EXPECT_EQ(m.generated_tokens, 10 + 3);
  EXPECT_EQ(m.kv_blocks_used, 0);
}

TEST_F(EngineMetricsTest, PreemptionDoesNotRecountThePrefixCache) {
  // 4 blocks of 16 tokens; A and B (20-token prompts, no common prefix) each
  // grow to 50 tokens (4 blocks). Both are admitted (2 blocks each) and decode
  // together for positions 20..31 (12 steps); at position 32 A needs a third
  // block, so B (admitted later) is preempted with 33 tokens (13 generated).
  // B then waits (its lookups are refused every step) while A decodes alone
  // for positions 32..48 (17 steps), is re-admitted after A finishes,
  // recomputes its 33 tokens in one step and decodes positions 33..48 (16 steps).
  EngineConfig cfg;
  cfg.kv_cache_memory = 4ull * 16 * 640;  // stories260K: 640 KV bytes per token (f16)
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  EngineCore& e = **engine;
  ASSERT_EQ(e.kv_spec().num_blocks, 4);
  submit(e, "a", ids(20, 10), greedy(30));
  submit(e, "b", ids(20, 100), greedy(30));
  run(e);
  const EngineMetrics m = e.metrics();
  EXPECT_EQ(m.preemptions, 1);
  EXPECT_EQ(m.prefix_query_tokens, 20 + 20);  // before: every refused lookup and the re-admission counted
  EXPECT_EQ(m.prefix_hit_tokens, 0);          // hits of the re-admission are not new prompt hits
  EXPECT_EQ(m.prompt_tokens_computed, 20 + 20 + 33);
  EXPECT_EQ(m.generated_tokens, 60);
  EXPECT_EQ(m.steps, 1 + 12 + 17 + 1 + 16);
  EXPECT_EQ(m.decode_steps, 12 + 17 + 16);
  EXPECT_EQ(m.decode_tokens, 2 * 12 + 17 + 16);
  EXPECT_EQ(m.finished_length, 2);
  EXPECT_EQ(m.finished_cancelled, 0);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_blocks_free, 4);
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.waiting, 0);
  EXPECT_EQ(finished_["a"].preemptions, 0);
  EXPECT_EQ(finished_["b"].preemptions, 1);
  EXPECT_EQ(finished_["b"].cached_tokens, 0);
  EXPECT_EQ(finished_["b"].generated_tokens, 30);
  EXPECT_EQ(finished_["b"].prompt_tokens, 20);
}

}  // namespace
}  // namespace tessera
