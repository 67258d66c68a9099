// Speculative decoding in the continuous-batching engine (stories260K as the
// target): n-gram prompt lookup gives exactly the non-speculative tokens
// (greedy and seeded sampling, with logprobs, stop strings, n > 1, mixed with
// non-speculating requests, chunked prefill, prefix caching and preemption),
// the block accounting holds after every step, and with a random proposer
// whose q differs from p the emitted tokens still follow the target's own
// distribution (chi-square tests), and so do they with a perturbed copy of
// the model as the draft (draft_proposer.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "engine/engine_core.h"
#include "engine/ngram_proposer.h"
#include "sample/sampler.h"
#include "spec_test_util.h"
#include "test_support.h"

namespace tessera {
namespace {

// --- NgramProposer ------------------------------------------------------------

std::vector<int32_t> propose(NgramProposer& p, const std::vector<int32_t>& tokens, int32_t k) {
  Proposal out;
  p.propose(tokens, k, out);
  EXPECT_TRUE(out.q.empty());
  return out.tokens;
}

TEST(NgramProposer, ProposesWhatFollowedTheLatestLongestMatch) {
  NgramProposer p(1, 3);
  // "5 6 7" occurs at 0 (followed by 8 9) and the suffix "6 7" also at 5 (followed by 1).
  EXPECT_EQ(propose(p, {5, 6, 7, 8, 9, 0, 6, 7, 1, 2, 5, 6, 7}, 2), (std::vector<int32_t>{8, 9}));
  NgramProposer q(1, 2);  // at most 2: "6 7" most recently at 6, followed by 1 2
  EXPECT_EQ(propose(q, {5, 6, 7, 8, 9, 0, 6, 7, 1, 2, 5, 6, 7}, 2), (std::vector<int32_t>{1, 2}));
  NgramProposer r(2, 3);  // no earlier "3 4" and unigrams are not looked up
  EXPECT_TRUE(propose(r, {1, 2, 3, 4}, 4).empty());
  NgramProposer one(1, 1);
  EXPECT_EQ(propose(one, {9}, 3), std::vector<int32_t>{});
}

TEST(NgramProposer, LoopsContinuePastTheEndOfTheHistory) {
  NgramProposer p(1, 4);
  // Period 3: "1 2 3 1 2" -> the suffix "1 2" follows at 0; the copy wraps.
  EXPECT_EQ(propose(p, {1, 2, 3, 1, 2}, 6), (std::vector<int32_t>{3, 1, 2, 3, 1, 2}));
  NgramProposer same(1, 4);
  EXPECT_EQ(propose(same, {4, 4}, 3), (std::vector<int32_t>{4, 4, 4}));
}

TEST(NgramProposer, IncrementalIndexEqualsAFreshOne) {
  std::mt19937 rng(7);
  std::vector<int32_t> tokens;
  NgramProposer incremental(1, 4);
  for (int i = 0; i < 400; ++i) {
    tokens.push_back(static_cast<int32_t>(rng() % 6));
    NgramProposer fresh(1, 4);
    ASSERT_EQ(propose(incremental, tokens, 5), propose(fresh, tokens, 5)) << "length " << tokens.size();
  }
}

TEST(SpeculativeOptions, BadValuesAreRefusedByName) {
  SpeculativeOptions o;
  o.method = "ngram";
  EXPECT_TRUE(o.validate().ok());
  o.k = 0;
  EXPECT_NE(o.validate().message().find("--spec-k"), std::string::npos);
  o.k = 4;
  o.ngram_min = 3;
  o.ngram_max = 2;
  EXPECT_NE(o.validate().message().find("--spec-ngram-min"), std::string::npos);
  o.ngram_min = 1;
  o.method = "medusa";
  EXPECT_NE(o.validate().message().find("unknown method"), std::string::npos);
  o.method = "ngram";
  o.disable_batch_size = 0;
  EXPECT_EQ(o.validate().code(), StatusCode::kInvalidArgument);
}

// --- Engine on stories260K --------------------------------------------------------

class SpecOnStories : public ::testing::Test {
 protected:
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok());
    model_ = std::move(m).value();
  }

  std::vector<Job> make_jobs() const { return mixed_spec_jobs(model_->tokenizer(), true); }

  std::unique_ptr<Model> model_;
};

// KV budgets (stories260K: 640 bytes per token, 16-token blocks): room for
// all 16 jobs at once, and 12 blocks, which forces preemptions.
constexpr uint64_t kRoomyKv = 256ull * 16 * 640;
constexpr uint64_t kSmallKv = 12ull * 16 * 640;

EngineConfig spec_config(int32_t budget, bool prefix, uint64_t kv_bytes) {
  EngineConfig cfg;
  cfg.threads = 2;
  cfg.ctx_size = 128;
  cfg.kv_cache_memory = kv_bytes;
  cfg.max_num_batched_tokens = budget;
  cfg.max_num_seqs = 16;
  cfg.enable_prefix_cache = prefix;
  cfg.spec.method = "ngram";
  cfg.spec.k = 5;
  cfg.spec.disable_batch_size = 64;
  cfg.spec.cost_aware = false;  // verify every proposal (the switch is tested on its own below)
  return cfg;
}

TEST_F(SpecOnStories, NgramGivesTheNonSpeculativeTokensAloneAndBatched) {
  const std::vector<Job> jobs = make_jobs();
  // Reference: each job alone, no speculation, roomy cache, no prefix cache.
  EngineConfig plain;
  plain.ctx_size = 512;
  plain.enable_prefix_cache = false;
  std::vector<Outcome> want;
  for (const Job& j : jobs) want.push_back(run_jobs(*model_, {j}, plain)[0]);
  for (const Outcome& w : want) EXPECT_FALSE(w.metrics.speculative);  // no proposer
  // Each job alone with speculation.
  int64_t accepted_alone = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    EngineMetrics em;
    const auto got = run_jobs(*model_, {jobs[i]}, spec_config(512, false, kRoomyKv), &em);
    expect_same(got[0], want[i], "alone, job " + std::to_string(i));
    EXPECT_EQ(got[0].metrics.spec_accepted_tokens, em.spec_accepted_tokens);
    EXPECT_EQ(got[0].metrics.speculative, jobs[i].options.speculative) << "job " << i;  // usage.speculative
    if (!jobs[i].options.speculative) {
      EXPECT_EQ(em.spec_proposed_tokens, 0) << "job " << i;
    }
    accepted_alone += em.spec_accepted_tokens;
  }
  EXPECT_GT(accepted_alone, 50);  // the repetitive prompts are looked up
  // All 16 at once: chunk sizes 7 and 512, prefix cache on and off, and a
  // small KV cache (12 blocks of 16 tokens) that forces preemptions.
  for (int32_t budget : {7, 512}) {
    for (bool prefix : {true, false}) {
      for (uint64_t kv : {kRoomyKv, kSmallKv}) {
        const std::string what = "budget " + std::to_string(budget) + (prefix ? " prefix" : " no prefix") +
                                 (kv == kSmallKv ? " small KV" : " roomy KV");
        SCOPED_TRACE(what);
        EngineMetrics em;
        const auto got = run_jobs(*model_, jobs, spec_config(budget, prefix, kv), &em);
        ASSERT_EQ(got.size(), jobs.size());
        for (size_t i = 0; i < jobs.size(); ++i) expect_same(got[i], want[i], what + ", job " + std::to_string(i));
        EXPECT_GT(em.spec_accepted_tokens, 0);
        EXPECT_LT(em.spec_accepted_tokens, em.spec_proposed_tokens);  // rejections happened too
        if (kv == kSmallKv) {
          EXPECT_GT(em.preemptions, 0);
        } else {
          EXPECT_EQ(em.preemptions, 0);
        }
        if (prefix) {
          EXPECT_GT(em.prefix_hit_tokens, 0);
        }
      }
    }
  }
}

TEST_F(SpecOnStories, SpeculationOffAboveTheBatchSizeThreshold) {
  std::vector<Job> jobs = make_jobs();
  EngineConfig cfg = spec_config(512, true, kRoomyKv);
  cfg.spec.disable_batch_size = 4;  // 16 running: no speculation until few are left
  EngineMetrics em;
  const auto all = run_jobs(*model_, jobs, cfg, &em);
  cfg.spec.disable_batch_size = 64;
  EngineMetrics em_on;
  const auto on = run_jobs(*model_, jobs, cfg, &em_on);
  for (size_t i = 0; i < jobs.size(); ++i) expect_same(all[i], on[i], "job " + std::to_string(i));
  EXPECT_LT(em.spec_proposed_tokens, em_on.spec_proposed_tokens);
}

TEST_F(SpecOnStories, CancellingASpeculatingRequestFreesItsBlocks) {
  EngineConfig cfg = spec_config(512, true, kRoomyKv);
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  const std::vector<Job> jobs = make_jobs();
  GenerationOptions o = jobs[0].options;  // greedy, repetitive prompt
  o.max_tokens = 100;
  o.ignore_eos = true;
  bool cancelled = false;
  auto id = (*engine)->submit(jobs[0].prompt, o, [&](const RequestEvent& ev) {
    if (ev.request_finished) cancelled = ev.cancelled;
  });
  ASSERT_TRUE(id.ok());
  for (int i = 0; i < 12; ++i) {
    (*engine)->step();
    ASSERT_TRUE((*engine)->check_invariants().ok());
  }
  EXPECT_GT((*engine)->metrics().spec_proposed_tokens, 0);
  (*engine)->cancel(*id);
  (*engine)->run_until_idle();
  EXPECT_TRUE(cancelled);
  EXPECT_TRUE((*engine)->check_invariants().ok());
  EXPECT_EQ((*engine)->metrics().kv_blocks_used, 0);
}

// The cost-aware switch (spec_goodput.h) with step times injected: when an
// extra row costs as much as the first, no proposal is verified (the steps
// count as declined) except the exploration steps; when extra rows are free,
// proposals are verified. The tokens are the non-speculative ones either way.
TEST_F(SpecOnStories, CostAwareSwitchVerifiesOnlyWhenRowsAreCheap) {
  std::vector<Job> jobs = make_jobs();
  jobs[0].options.max_tokens = 80;
  jobs[0].options.ignore_eos = true;
  EngineConfig plain = spec_config(512, true, kRoomyKv);
  plain.spec = SpeculativeOptions();
  const auto want = run_jobs(*model_, {jobs[0]}, plain);
  for (bool cheap : {false, true}) {
    SCOPED_TRACE(cheap ? "cheap extra rows" : "every row costs the same");
    EngineConfig cfg = spec_config(512, true, kRoomyKv);
    cfg.spec.cost_aware = true;
    cfg.step_ms_for_test = [cheap](int64_t rows) { return cheap ? 10.0 + 0.01 * rows : 10.0 * rows; };
    EngineMetrics em;
    const auto got = run_jobs(*model_, {jobs[0]}, cfg, &em);  // greedy, a repetitive prompt
    expect_same(got[0], want[0], "job 0");
    if (cheap) {
      EXPECT_GT(em.spec_accepted_tokens, 10);
      EXPECT_EQ(em.spec_declined_steps, 0);
    } else {
      // At most one exploration step in 64 decisions verifies (k = 5 proposals).
      EXPECT_LE(em.spec_proposed_tokens, 5 * (em.spec_declined_steps / 63 + 1));
      EXPECT_GT(em.spec_declined_steps, 10);
    }
  }
}

TEST_F(SpecOnStories, BadConfigurationIsRefused) {
  EngineConfig cfg;
  cfg.spec.method = "ngram";
  cfg.spec.k = 0;
  auto e = EngineCore::create(*model_, cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("--spec-k"), std::string::npos);
}

// --- Distribution with a random proposer ------------------------------------------

// The target's logits after the prompt + a tail of generated tokens (the
// reference computed below), keyed by the tail.
using TailLogits = std::map<std::vector<int32_t>, std::vector<float>>;

// A stand-in for a draft model: q = 0.7 softmax(logits / 2) + 0.3 uniform from
// the target's own raw logits where the test has them (uniform elsewhere) —
// flatter than p, unaware of top-k / top-p / penalties, so it differs from p
// but overlaps it. Draws with its own generator, independent of the engine's
// uniforms.
class DraftLikeProposer final : public Proposer {
 public:
  DraftLikeProposer(const TailLogits* logits, size_t prompt_len, int32_t n_vocab, uint64_t seed)
      : logits_(logits), prompt_len_(prompt_len), n_vocab_(n_vocab), rng_(seed) {}
  void propose(std::span<const int32_t> tokens, int32_t k, Proposal& out) override {
    out.clear();
    std::vector<int32_t> tail(tokens.begin() + static_cast<std::ptrdiff_t>(prompt_len_), tokens.end());
    for (int32_t i = 0; i < k; ++i) {
      std::vector<double> q(static_cast<size_t>(n_vocab_), 0.3 / n_vocab_);
      if (auto it = logits_->find(tail); it != logits_->end()) {
        const std::vector<float>& l = it->second;
        const float max = *std::max_element(l.begin(), l.end());
        double z = 0;
        for (float v : l) z += std::exp(0.5 * (v - max));
        for (size_t t = 0; t < q.size(); ++t) q[t] += 0.7 * std::exp(0.5 * (l[t] - max)) / z;
      } else {
        for (double& v : q) v = 1.0 / n_vocab_;
      }
      std::discrete_distribution<int32_t> d(q.begin(), q.end());
      const int32_t x = d(rng_);
      out.tokens.push_back(x);
      for (double v : q) out.q.push_back(static_cast<float>(v));
      tail.push_back(x);
    }
  }

 private:
  const TailLogits* logits_;
  size_t prompt_len_;
  int32_t n_vocab_;
  std::mt19937_64 rng_;
};

class SpecDistribution : public SpecOnStories, public ::testing::WithParamInterface<int> {};

TEST_P(SpecDistribution, FirstPositionsFollowTheTargetsDistribution) {
  SamplingParams sp;
  sp.min_p = 0;
  std::string name;
  // Parameters 3..5: the same settings with a real draft model, stories260K
  // with noise on its weights (its q differs from p), instead of DraftLikeProposer.
  const bool draft_model = GetParam() >= 3;
  switch (GetParam() % 3) {
    case 0:  // temperature 1 (top-k 10 keeps the exact reference small)
      sp.temperature = 1.0f, sp.top_k = 10, sp.top_p = 1.0f, name = "temperature 1, top-k 10";
      break;
    case 1:
      sp.temperature = 0.7f, sp.top_k = 0, sp.top_p = 0.9f, name = "temperature 0.7, top-p 0.9";
      break;
    default:  // the penalty at position 2 depends on the token just accepted at position 1
      sp.temperature = 1.0f, sp.top_k = 10, sp.top_p = 1.0f, sp.repetition_penalty = 1.8f,
      name = "temperature 1, top-k 10, repetition penalty 1.8";
      break;
  }
  if (draft_model) name += ", perturbed draft model";
  SCOPED_TRACE(name);
  std::unique_ptr<Model> draft;
  if (draft_model) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("tessera_spec_draft_" + std::to_string(getpid()) + ".gguf"))
            .string();
    ASSERT_TRUE(write_perturbed_copy(model_->path(), path, 0.1, 2024).ok());
    auto d = Model::load(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    draft = std::move(d).value();
  }
  const Tokenizer& tok = model_->tokenizer();
  const std::vector<int32_t> prompt = tok.encode("She saw a", true);  // uncertain at the next three positions
  const auto n_vocab = model_->config().n_vocab;

  // The exact target distribution of tokens 0, 1 and 2 (marginals), from the
  // model's logits after the prompt, prompt + t0 and prompt + t0 + t1, each
  // processed by a Sampler with the same parameters and history.
  EngineConfig ref_cfg;
  ref_cfg.threads = 2;
  ref_cfg.ctx_size = 64;
  ref_cfg.max_num_seqs = 64;
  ref_cfg.enable_prefix_cache = false;
  auto ref = EngineCore::create(*model_, ref_cfg);
  ASSERT_TRUE(ref.ok());
  // Last-position logits of each continuation of the prompt.
  auto last_logits = [&](const std::vector<std::vector<int32_t>>& tails) {
    std::vector<std::vector<float>> rows(tails.size());
    GenerationOptions o;
    o.prompt_logits = true;
    o.max_tokens = 0;
    for (size_t i = 0; i < tails.size(); ++i) {
      std::vector<int32_t> p = prompt;
      p.insert(p.end(), tails[i].begin(), tails[i].end());
      const int32_t last = static_cast<int32_t>(p.size()) - 1;
      auto id = (*ref)->submit(p, o, [&rows, i, last, n_vocab](const RequestEvent& ev) {
        if (ev.prompt_logits && ev.prompt_logits_begin + ev.prompt_logits_rows > last) {
          const float* row = ev.prompt_logits + static_cast<size_t>(last - ev.prompt_logits_begin) * n_vocab;
          rows[i].assign(row, row + n_vocab);
        }
      });
      EXPECT_TRUE(id.ok());
    }
    (*ref)->run_until_idle();
    return rows;
  };
  auto dist = [&](const std::vector<float>& row, const std::vector<int32_t>& tail) {
    Sampler s(sp, prompt);
    for (int32_t t : tail) s.accept(t);
    EXPECT_TRUE(s.prepare(row).ok());
    return s.candidates();
  };
  std::map<int32_t, double> p0, p1, p2;
  const auto row0 = last_logits({{}});
  std::vector<std::vector<int32_t>> tails1;
  std::vector<double> mass1;
  for (const auto& c : dist(row0[0], {})) {
    p0[c.id] += c.p;
    tails1.push_back({c.id});
    mass1.push_back(c.p);
  }
  const auto rows1 = last_logits(tails1);
  std::vector<std::vector<int32_t>> tails2;
  std::vector<double> mass2;
  for (size_t i = 0; i < tails1.size(); ++i) {
    for (const auto& c : dist(rows1[i], tails1[i])) {
      p1[c.id] += mass1[i] * c.p;
      tails2.push_back({tails1[i][0], c.id});
      mass2.push_back(mass1[i] * c.p);
    }
  }
  ASSERT_LT(tails2.size(), 4000u) << "the reference support is too large for this test";
  const auto rows2 = last_logits(tails2);
  TailLogits tail_logits;
  for (size_t i = 0; i < tails1.size(); ++i) tail_logits[tails1[i]] = rows1[i];
  for (size_t i = 0; i < tails2.size(); ++i) tail_logits[tails2[i]] = rows2[i];
  for (size_t i = 0; i < tails2.size(); ++i) {
    for (const auto& c : dist(rows2[i], tails2[i])) p2[c.id] += mass2[i] * c.p;
  }

  // Many seeded runs of 3 tokens with the random proposer (k = 3: the
  // tokens at positions 1 and 2 come out of verification).
  constexpr int64_t kRuns = 3000;
  EngineConfig cfg = ref_cfg;
  cfg.enable_prefix_cache = true;
  cfg.spec.k = 3;
  cfg.spec.adaptive = false;
  cfg.spec.cost_aware = false;
  cfg.spec.disable_batch_size = 1000;
  const size_t prompt_len = prompt.size();
  if (draft_model) {
    cfg.spec.method = "draft";
    cfg.spec.draft_model = draft->path();
    cfg.draft_model = draft.get();
  } else {
    cfg.proposer_factory = [&tail_logits, prompt_len, n_vocab](uint64_t seed, int32_t choice) {
      return std::make_unique<DraftLikeProposer>(&tail_logits, prompt_len, n_vocab,
                                                 seed * 31 + static_cast<uint64_t>(choice) + 12345);
    };
  }
  auto engine = EngineCore::create(*model_, cfg);
  ASSERT_TRUE(engine.ok());
  std::map<int32_t, int64_t> c0, c1, c2;
  GenerationOptions o;
  o.max_tokens = 3;
  o.ignore_eos = true;
  o.sampling = sp;
  for (int64_t r = 0; r < kRuns; ++r) {
    o.sampling.seed = 1000003 * static_cast<uint64_t>(r) + 17;
    auto id = (*engine)->submit(prompt, o, [&](const RequestEvent& ev) {
      if (!ev.request_finished) return;
      const auto& t = (*ev.results)[0].tokens;
      ASSERT_EQ(t.size(), 3u);
      ++c0[t[0]];
      ++c1[t[1]];
      ++c2[t[2]];
    });
    ASSERT_TRUE(id.ok());
  }
  (*engine)->run_until_idle();
  EXPECT_TRUE((*engine)->check_invariants().ok());
  const EngineMetrics em = (*engine)->metrics();
  // Both verification outcomes occurred many times.
  EXPECT_GT(em.spec_accepted_tokens, kRuns / 5);
  EXPECT_GT(em.spec_proposed_tokens - em.spec_accepted_tokens, kRuns / 5);
  EXPECT_GE(em.spec_proposed_tokens, 2 * kRuns);  // positions 1 and 2 of every run were proposed
  // Pearson chi-square at significance 0.001 per position (z = 3.090); the
  // seeds are fixed, so the outcome is deterministic.
  constexpr double kZ = 3.090;
  int pos = 0;
  for (const auto& [counts, probs] : {std::pair{&c0, &p0}, std::pair{&c1, &p1}, std::pair{&c2, &p2}}) {
    const auto [stat, df] = chi2(*counts, *probs, kRuns);
    ASSERT_GE(df, 1) << "position " << pos;
    std::printf("%s, position %d: chi-square %.1f, %d degrees of freedom, critical %.1f; accepted %lld of %lld\n",
                name.c_str(), pos, stat, df, chi2_critical(df, kZ), static_cast<long long>(em.spec_accepted_tokens),
                static_cast<long long>(em.spec_proposed_tokens));
    EXPECT_LT(stat, chi2_critical(df, kZ))
        << "position " << pos << ": chi-square " << stat << " with " << df << " degrees of freedom";
    ++pos;
  }
}

INSTANTIATE_TEST_SUITE_P(Params, SpecDistribution, ::testing::Values(0, 1, 2, 3, 4, 5));

}  // namespace
}  // namespace tessera
