// Tensor and pipeline parallelism against the single-rank engine, run under
// `mpirun -np N parallel_test` (ctest runs it with N = 2 and 4, and once
// without mpirun for the single-process checks). Rank 0 runs the tests; the
// other ranks serve its engines (run_parallel_worker). For every layout of N
// ranks (N = 2: T = 2, P = 2; N = 4: T = 4, T × P = 2 × 2, P = 4):
//  - last-position logits of stories260K and of every Hugging Face fixture
//    within 1e-4 of the single-rank ones (relative to the largest |logit|);
//  - greedy and seeded tokens identical to the single-rank engine's, for 32
//    requests at once with prefix cache on/off, prefill chunks of 7 and 512
//    tokens, and a KV cache small enough to force preemption.
#include "tessera/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/cpu_share.h"
#include "dist/mpi_runtime.h"
#include "engine/engine_core.h"
#include "engine/model_executor.h"
#include "engine/run_all.h"
#include "model/micro_batch.h"
#include "model/shard.h"
#include "test_support.h"

namespace tessera {
namespace {

int g_world = 1;

std::vector<ParallelLayout> layouts() {
  std::vector<ParallelLayout> out;
  if (g_world == 2) out = {{2, 1, {}}, {1, 2, {}}, {1, 2, {1, 4}}};
  if (g_world == 4) out = {{4, 1, {}}, {2, 2, {}}, {1, 4, {}}};
  return out;
}

std::string name(const ParallelLayout& l) {
  std::ostringstream s;
  s << "T=" << l.tp_size << " P=" << l.pp_size;
  for (int n : l.layer_split) s << " " << n;
  return s.str();
}

// Logits of every position of `prompt`, run as one prefill step.
std::vector<float> prompt_logits(const Model& m, const ParallelLayout& layout, const std::vector<int32_t>& prompt) {
  ExecutorConfig cfg;
  cfg.backend.threads = 1;
  cfg.kv_dtype = KvDtype::kF32;
  cfg.ctx_size = 256;
  cfg.parallel = layout;
  auto e = ModelExecutor::create(m, cfg);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (!e.ok()) return {};
  BlockTable table((*e)->kv_spec().block_size);
  for (int32_t b = 0; b * (*e)->kv_spec().block_size < static_cast<int32_t>(prompt.size()); ++b) table.append(b);
  ForwardBatch batch;
  batch.append(prompt, 0, static_cast<int64_t>(prompt.size()), table, ForwardBatch::Logits::kAll);
  std::vector<float> logits;
  const Status st = (*e)->forward(batch, logits);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

void expect_close(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  float scale = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    worst = std::max(worst, std::fabs(want[i] - got[i]));
  }
  EXPECT_LE(worst, 1e-4f * scale) << what << ": max |difference| " << worst << " against max |logit| " << scale;
}

TEST(Parallel, LogitsMatchOneRankOnStoriesAndHfFixtures) {
  if (g_world == 1) GTEST_SKIP() << "run under mpirun -np 2 or 4 (ctest does)";
  std::vector<std::string> paths;
  TESSERA_REQUIRE_SHARED_FILE(stories, "models/stories260K.gguf");
  paths.push_back(stories);
  for (const auto& d : std::filesystem::directory_iterator(testing::shared_dir() + "/fixtures/hf"))
    paths.push_back(d.path());
  std::sort(paths.begin() + 1, paths.end());
  for (const std::string& path : paths) {
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    std::vector<int32_t> prompt;
    for (int i = 0; i < 21; ++i) prompt.push_back((i * 37 + 11) % (*m)->config().n_vocab);
    const std::vector<float> want = prompt_logits(**m, {}, prompt);
    for (const ParallelLayout& l : layouts()) {
      // Only the layouts this model's shape splits into (all of them here).
      if (!plan_shard((*m)->config(), (*m)->weights(), l, 0).ok()) continue;
      expect_close(want, prompt_logits(**m, l, prompt), path + " " + name(l));
    }
  }
}

// A prompt long enough to run as pipeline micro-batches under P > 1
// (model/micro_batch.h: 150 rows are 4 micro-batches), sequences cut across
// them included.
TEST(Parallel, LongPromptLogitsMatchOneRankThroughPipelineMicroBatches) {
  if (g_world == 1) GTEST_SKIP() << "run under mpirun -np 2 or 4 (ctest does)";
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  std::vector<int32_t> prompt;
  for (int i = 0; i < 150; ++i) prompt.push_back((i * 37 + 11) % (*m)->config().n_vocab);
  ASSERT_GT(micro_batch_ranges(150, 2, micro_batch_min_rows()).size(), 1u);
  const std::vector<float> want = prompt_logits(**m, {}, prompt);
  for (const ParallelLayout& l : layouts()) expect_close(want, prompt_logits(**m, l, prompt), "stories " + name(l));
}

TEST(Parallel, ShapesThatDoNotSplitAreOneClearError) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok());
  const auto three = plan_shard((*m)->config(), (*m)->weights(), {3, 1, {}}, 0);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.status().message(), "--tensor-parallel-size 3 does not divide the model's 8 attention heads");
  // 8 heads / 4 KV heads at T = 8: each KV head replicated on two ranks.
  const auto eight = plan_shard((*m)->config(), (*m)->weights(), {8, 1, {}}, 5);
  ASSERT_TRUE(eight.ok()) << eight.status().to_string();
  EXPECT_EQ(eight->n_heads, 1);
  EXPECT_EQ(eight->n_kv_heads, 1);
  EXPECT_EQ(eight->kv_head_begin, 2);
  EXPECT_FALSE(stage_layers(5, {1, 6, {}}).ok());
  EXPECT_FALSE(stage_layers(5, {1, 2, {2, 2}}).ok());
  EXPECT_EQ(stage_layers(5, {1, 2, {}}).value(), (std::vector<int>{3, 2}));
  // Without mpirun a parallel layout is refused, naming the command to use.
  if (g_world == 1) {
    ExecutorConfig cfg;
    cfg.parallel = {2, 1, {}};
    const auto e = ModelExecutor::create(**m, cfg);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.status().message().find("mpirun -np 2"), std::string::npos) << e.status().message();
  }
}

using Job = testing::EngineJob;
using testing::run_all;

TEST(Parallel, TokensMatchOneRankUnderBatchingPreemptionAndCaching) {
  if (g_world == 1) GTEST_SKIP() << "run under mpirun -np 2 or 4 (ctest does)";
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto loaded = Model::load(path);
  ASSERT_TRUE(loaded.ok());
  const Model& m = **loaded;
  const Tokenizer& tok = m.tokenizer();
  const auto shared =
      tok.encode("Once upon a time, there was a little girl named Lily. She loved to play outside.", true);
  const char* endings[] = {" One day",  " The sun",   " Her mom", " Tom was",
                           " They saw", " A big dog", " It was",  " Then"};
  std::vector<Job> jobs;
  for (int i = 0; i < 24; ++i) {
    Job j;
    j.prompt = i % 2 == 0 ? shared : tok.encode(std::to_string(i), true);
    const auto end = tok.encode(endings[i % 8], false);
    j.prompt.insert(j.prompt.end(), end.begin(), end.end());
    j.options.max_tokens = 8 + (i * 7) % 33;
    j.options.sampling.temperature = i % 3 == 0 ? 0.0f : 0.8f;
    j.options.sampling.seed = 1000 + static_cast<uint64_t>(i);
    jobs.push_back(std::move(j));
  }
  EngineConfig solo;
  solo.ctx_size = 256;
  solo.enable_prefix_cache = false;
  std::vector<std::vector<int32_t>> alone;
  EngineMetrics unused;
  for (const Job& j : jobs) alone.push_back(run_all(m, {j}, solo, &unused)[0]);

  for (const ParallelLayout& l : layouts()) {
    // 12 blocks on the rank holding the most KV bytes per token: far fewer than 24 requests need.
    uint64_t per_token = 0;
    for (int r = 0; r < l.world_size(); ++r) {
      const ShardPlan p = plan_shard(m.config(), m.weights(), l, r).value();
      per_token = std::max<uint64_t>(per_token, 2ull * p.n_layers() * p.n_kv_heads * m.config().head_dim * 2);
    }
    for (int32_t budget : {7, 512}) {
      for (bool prefix : {true, false}) {
        std::ostringstream trace;
        trace << name(l) << " max_num_batched_tokens " << budget << (prefix ? " prefix" : "");
        SCOPED_TRACE(trace.str());
        EngineConfig cfg;
        cfg.threads = 1;
        cfg.ctx_size = 128;
        cfg.kv_cache_memory = 12 * 16 * per_token;
        cfg.max_num_batched_tokens = budget;
        cfg.max_num_seqs = 16;
        cfg.enable_prefix_cache = prefix;
        cfg.parallel = l;
        cfg.pp_step_min_seqs = 1;  // share even small batches among the steps in flight
        EngineMetrics metrics;
        const auto got = run_all(m, jobs, cfg, &metrics);
        ASSERT_EQ(got.size(), jobs.size());
        for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "job " << i;
        EXPECT_GT(metrics.preemptions, 0);
        EXPECT_EQ(metrics.prefix_hit_tokens > 0, prefix);
        // P > 1: steps ran in flight (issued before the previous one completed).
        EXPECT_EQ(metrics.steps_overlapped > 0, l.pp_size > 1) << metrics.steps_overlapped;
      }
    }
  }
}

// Steps in flight under P > 1 (docs/parallelism.md): 16 requests of mixed
// lengths, greedy and seeded, four of them cancelled while a step holding
// them is in flight: the others' tokens equal the single-rank engine's, a
// cancelled one's streamed tokens are a prefix of its single-rank tokens, and
// every block comes back.
TEST(Parallel, StepsInFlightCancelAndReturnEveryBlock) {
  if (g_world == 1) GTEST_SKIP() << "run under mpirun -np 2 or 4 (ctest does)";
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto loaded = Model::load(path);
  ASSERT_TRUE(loaded.ok());
  const Model& m = **loaded;
  std::vector<Job> jobs;
  for (int i = 0; i < 16; ++i) {
    Job j;
    j.prompt = m.tokenizer().encode("Once upon a time " + std::to_string(i * 13), true);
    for (int k = 0; k < (i * 5) % 23; ++k) j.prompt.push_back((k * 17 + 3 * i + 5) % m.config().n_vocab);
    j.options.max_tokens = 6 + (i * 11) % 40;
    j.options.sampling.temperature = i % 2 == 0 ? 0.0f : 0.9f;
    j.options.sampling.seed = 77 + static_cast<uint64_t>(i);
    jobs.push_back(std::move(j));
  }
  EngineConfig solo;
  solo.ctx_size = 256;
  std::vector<std::vector<int32_t>> alone;
  for (const Job& j : jobs) alone.push_back(run_all(m, {j}, solo)[0]);

  for (const ParallelLayout& l : layouts()) {
    if (l.pp_size == 1) continue;
    SCOPED_TRACE(name(l));
    EngineConfig cfg;
    cfg.threads = 1;
    cfg.ctx_size = 256;
    cfg.max_num_batched_tokens = 64;
    cfg.parallel = l;
    cfg.pp_step_min_seqs = 1;  // share even small batches among the steps in flight
    auto engine = EngineCore::create(m, cfg);
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    EngineCore& e = **engine;
    const size_t n = jobs.size();
    std::vector<std::vector<int32_t>> streamed(n), finished(n);
    std::vector<int> cancelled(n, 0);
    std::vector<uint64_t> ids(n);
    for (size_t i = 0; i < n; ++i) {
      auto id = e.submit(jobs[i].prompt, jobs[i].options, [&, i](const RequestEvent& ev) {
        if (ev.step.token >= 0) streamed[i].push_back(ev.step.token);
        if (!ev.request_finished) return;
        EXPECT_TRUE(ev.error.ok()) << ev.error.to_string();
        cancelled[i] = ev.cancelled ? 1 : 0;
        if (!ev.cancelled) finished[i] = (*ev.results)[0].tokens;
      });
      ASSERT_TRUE(id.ok());
      ids[i] = *id;
    }
    // Cancel requests 3, 7, 11 and 15 once they have two tokens and a step holding them is in flight.
    int cancels_in_flight = 0, max_in_flight = 0;
    std::vector<bool> asked(n, false);
    while (e.step()) {
      max_in_flight = std::max(max_in_flight, e.steps_in_flight());
      for (size_t i = 3; i < n; i += 4) {
        if (asked[i] || streamed[i].size() < 2 || !e.in_flight(ids[i])) continue;
        e.cancel(ids[i]);
        asked[i] = true;
        ++cancels_in_flight;
      }
    }
    EXPECT_EQ(max_in_flight, l.pp_size - 1);  // between calls: step() completes one when P are in flight
    EXPECT_EQ(cancels_in_flight, 4);
    for (size_t i = 0; i < n; ++i) {
      if (asked[i]) {
        EXPECT_EQ(cancelled[i], 1) << "job " << i;
        ASSERT_LE(streamed[i].size(), alone[i].size()) << "job " << i;
        EXPECT_TRUE(std::equal(streamed[i].begin(), streamed[i].end(), alone[i].begin())) << "job " << i;
      } else {
        EXPECT_EQ(finished[i], alone[i]) << "job " << i;
      }
    }
    const Status inv = e.check_invariants();
    EXPECT_TRUE(inv.ok()) << inv.to_string();
    const EngineMetrics mt = e.metrics();
    EXPECT_EQ(mt.kv_blocks_used, 0);
    EXPECT_EQ(mt.finished_cancelled, 4);
    EXPECT_GT(mt.steps_overlapped, 0);
    engine->reset();  // one session at a time
    {
      // An engine destroyed with a step in flight ends its session cleanly: the next one runs.
      auto stopped = EngineCore::create(m, cfg);
      ASSERT_TRUE(stopped.ok()) << stopped.status().to_string();
      for (int i = 0; i < 4; ++i) ASSERT_TRUE((*stopped)->submit(jobs[0].prompt, jobs[0].options, nullptr).ok());
      (*stopped)->step();
      EXPECT_EQ((*stopped)->steps_in_flight(), 1);
    }
    EXPECT_EQ(run_all(m, {jobs[0]}, cfg)[0], alone[0]);
  }
}

// The ranks' affinity masks, exchanged at MPI start, tell rank 0 whether
// ranks share its CPUs (core/cpu_share.h). ctest states what the launch
// gives: parallel_test_np2_one_core starts both ranks on CPU 0, so rank 0
// must see one peer on one CPU, and its waits yield (the tests above then ran
// through the non-blocking sends and all-gathers).
TEST(Parallel, RanksSharingCpusAreDetected) {
  const char* want = std::getenv("TESSERA_EXPECT_CPU_SHARING");
  if (want == nullptr || g_world == 1) GTEST_SKIP() << "set by ctest for a launch with a known CPU layout";
  EXPECT_EQ(cpus_oversubscribed(), std::string(want) == "1");
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tessera::g_world = tessera::launched_ranks();
  if (tessera::g_world > 1) {
    if (tessera::Status st = tessera::init_parallel(tessera::g_world); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.to_string().c_str());
      return 1;
    }
    if (tessera::parallel_rank() != 0) {
      const tessera::Status st = tessera::run_parallel_worker();
      if (!st.ok()) std::fprintf(stderr, "rank %d: %s\n", tessera::parallel_rank(), st.to_string().c_str());
      return st.ok() ? 0 : 1;
    }
  }
  return RUN_ALL_TESTS();
}
