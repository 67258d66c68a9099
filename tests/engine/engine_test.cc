// The continuous-batching engine on a real model: a request's tokens do not
// depend on what runs beside it, on preemption, on prefix-cache hits or on
// the prefill chunk size; blocks are all returned at the end.
#include <gtest/gtest.h>

#include <map>

#include "engine/engine_core.h"
#include "engine/run_all.h"
#include "test_support.h"

namespace tessera {
namespace {

using Job = testing::EngineJob;
using testing::run_all;

std::vector<Job> make_jobs(const Model& m) {
  const Tokenizer& tok = m.tokenizer();
  const auto shared = tok.encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.",
      true);
  const char* endings[] = {" One day",  " The sun",   " Her mom", " Tom was",
                           " They saw", " A big dog", " It was",  " Then"};
  std::vector<Job> jobs;
  for (int i = 0; i < 32; ++i) {
    Job j;
    if (i % 2 == 0) {  // half share a long prefix
      j.prompt = shared;
      const auto end = tok.encode(endings[i % 8], false);
      j.prompt.insert(j.prompt.end(), end.begin(), end.end());
    } else {
      j.prompt = tok.encode(std::string(endings[i % 8]) + " " + std::to_string(i), true);
    }
    j.options.max_tokens = 8 + (i * 7) % 33;
    if (i % 3 == 0) {
      j.options.sampling.temperature = 0;
    } else {
      j.options.sampling.temperature = 0.8f;
      j.options.sampling.seed = 1000 + static_cast<uint64_t>(i);
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

class EngineOnStories : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok());
    model_ = std::move(m).value();
    jobs_ = make_jobs(*model_);
    // Reference: each job alone, with a roomy cache and no prefix cache.
    EngineConfig solo;
    solo.ctx_size = 512;
    solo.enable_prefix_cache = false;
    for (const Job& j : jobs_) alone_.push_back(run_all(*model_, {j}, solo)[0]);
  }
  std::unique_ptr<Model> model_;
  std::vector<Job> jobs_;
  std::vector<std::vector<int32_t>> alone_;
};

TEST_F(EngineOnStories, TokensDoNotDependOnBatchingPreemptionOrCaching) {
  for (int32_t budget : {7, 512}) {
    for (bool prefix : {true, false}) {
      SCOPED_TRACE("max_num_batched_tokens " + std::to_string(budget) +
                   (prefix ? " prefix cache" : " no prefix cache"));
      EngineConfig cfg;
      cfg.threads = 2;
      cfg.ctx_size = 128;
      cfg.kv_cache_memory = 12ull * 16 * 640;  // 12 blocks: far less than 32 requests need
      cfg.max_num_batched_tokens = budget;
      cfg.max_num_seqs = 16;
      cfg.enable_prefix_cache = prefix;
      EngineMetrics metrics;
      const auto got = run_all(*model_, jobs_, cfg, &metrics);
      for (size_t i = 0; i < jobs_.size(); ++i) EXPECT_EQ(got[i], alone_[i]) << "job " << i;
      EXPECT_GT(metrics.preemptions, 0);
      if (prefix) {
        EXPECT_GT(metrics.prefix_hit_tokens, 0);
      } else {
        EXPECT_EQ(metrics.prefix_hit_tokens, 0);
      }
      EXPECT_EQ(metrics.finished_length + metrics.finished_stop, 32);
    }
  }
}

TEST_F(EngineOnStories, CachedPrefixIsReportedPerRequest) {
  EngineConfig cfg;
  cfg.ctx_size = 512;
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  std::vector<int32_t> cached;
  std::vector<std::vector<int32_t>> tokens;
  for (int rep = 0; rep < 2; ++rep) {
    ASSERT_TRUE((*engine)
                    ->submit(jobs_[0].prompt, jobs_[0].options,
                             [&](const RequestEvent& ev) {
                               if (ev.request_finished) {
                                 cached.push_back(ev.metrics->cached_tokens);
                                 tokens.push_back((*ev.results)[0].tokens);
                                 EXPECT_GT(ev.metrics->ttft_ms, 0);
                                 EXPECT_GE(ev.metrics->e2e_ms, ev.metrics->ttft_ms);
                               }
                             })
                    .ok());
    (*engine)->run_until_idle();
  }
  ASSERT_EQ(cached.size(), 2u);
  EXPECT_EQ(cached[0], 0);
  EXPECT_EQ(cached[1], static_cast<int32_t>((jobs_[0].prompt.size() - 1) / 16 * 16));
  EXPECT_EQ(tokens[0], tokens[1]);
}

TEST_F(EngineOnStories, CancelFreesBlocksAndRefusesImpossibleRequests) {
  EngineConfig cfg;
  cfg.ctx_size = 256;
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  bool cancelled = false;
  GenerationOptions long_run;
  long_run.max_tokens = 200;
  long_run.ignore_eos = true;
  auto id = (*engine)->submit(jobs_[0].prompt, long_run, [&](const RequestEvent& ev) {
    if (ev.request_finished) cancelled = ev.cancelled;
  });
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 5; ++i) (*engine)->step();
  (*engine)->cancel(*id);
  (*engine)->run_until_idle();
  EXPECT_TRUE(cancelled);
  EXPECT_EQ((*engine)->metrics().kv_blocks_used, 0);
  EXPECT_EQ((*engine)->metrics().finished_cancelled, 1);
  GenerationOptions too_long;
  too_long.max_tokens = 300;  // prompt + 300 > ctx 256
  EXPECT_EQ((*engine)->submit(jobs_[0].prompt, too_long, nullptr).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ((*engine)->submit({}, {}, nullptr).status().code(), StatusCode::kOutOfRange);
}

TEST_F(EngineOnStories, BackgroundThreadServesConcurrentSubmitters) {
  EngineConfig cfg;
  cfg.ctx_size = 256;
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  (*engine)->start();
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::vector<int32_t>> got(8);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      auto id = (*engine)->submit(jobs_[static_cast<size_t>(i)].prompt, jobs_[static_cast<size_t>(i)].options,
                                  [&, i](const RequestEvent& ev) {
                                    if (ev.request_finished) {
                                      std::lock_guard<std::mutex> lock(mu);
                                      got[static_cast<size_t>(i)] = (*ev.results)[0].tokens;
                                      ++done;
                                      cv.notify_all();
                                    }
                                  });
      EXPECT_TRUE(id.ok());
    });
  }
  for (auto& t : clients) t.join();
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done == 8; });
  lock.unlock();
  (*engine)->stop();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(got[i], alone_[i]);
}

}  // namespace
}  // namespace tessera
