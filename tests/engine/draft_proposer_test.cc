// The draft-model proposer (src/engine/draft_proposer.h) with stories260K as
// the target: drafted by its own Q8_0 requantization and by a perturbed copy
// (weights with noise), greedy requests give exactly the non-speculative
// tokens alone and in a batch of 16 mixed with non-speculating requests,
// with prefix caching on and off, chunk sizes 7 and 512 and under
// preemption; the target's and the draft's block accounting hold after every
// step and every block is free (or cached) at the end. A draft with another
// vocabulary is refused. (The chi-square distribution tests with the
// perturbed draft are in speculative_test.)
#include "engine/draft_proposer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "engine/engine_core.h"
#include "spec_test_util.h"
#include "tessera/tools.h"
#include "test_support.h"

namespace tessera {
namespace {

// The perturbed draft's noise (relative to each matrix's RMS).
constexpr double kNoise = 0.1;

// A copy of the GGUF file `in` whose token `id` has another text.
Status write_renamed_token_copy(const std::string& in, const std::string& out, int32_t id) {
  TESSERA_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(in));
  GgufWriter w;
  for (const GgufKeyValue& kv : f.metadata()) {
    GgufValue v = kv.value;
    if (kv.key == "tokenizer.ggml.tokens") v.array.at(static_cast<size_t>(id)).str = "<renamed>";
    w.add_value(kv.key, v);
  }
  for (const GgufTensorInfo& t : f.tensors())
    w.add_tensor(t.name, t.shape, *t.dtype, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  return w.write(out);
}

class DraftOnStories : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testing::shared_path("models/stories260K.gguf");
    if (!testing::file_exists(path)) return;
    dir_ = new std::string(std::filesystem::temp_directory_path() / ("tessera_draft_" + std::to_string(getpid())));
    std::filesystem::create_directories(*dir_);
    ASSERT_TRUE(tools::quantize(path, *dir_ + "/q8_0.gguf", "q8_0", 2).ok());
    ASSERT_TRUE(write_perturbed_copy(path, *dir_ + "/perturbed.gguf", kNoise, 2024).ok());
    ASSERT_TRUE(write_renamed_token_copy(path, *dir_ + "/other_vocab.gguf", 300).ok());
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
    auto m = Model::load(path);
    ASSERT_TRUE(m.ok());
    model_ = std::move(m).value();
    auto q8 = Model::load(*dir_ + "/q8_0.gguf");
    ASSERT_TRUE(q8.ok()) << q8.status().to_string();
    q8_ = std::move(q8).value();
    auto pert = Model::load(*dir_ + "/perturbed.gguf");
    ASSERT_TRUE(pert.ok()) << pert.status().to_string();
    perturbed_ = std::move(pert).value();
  }

  std::vector<Job> make_jobs() const { return mixed_spec_jobs(model_->tokenizer(), false); }

  EngineConfig draft_config(const Model& draft, int32_t budget, bool prefix, uint64_t kv_bytes) const {
    EngineConfig cfg;
    cfg.threads = 2;
    cfg.ctx_size = 128;
    cfg.kv_cache_memory = kv_bytes;
    cfg.max_num_batched_tokens = budget;
    cfg.max_num_seqs = 16;
    cfg.enable_prefix_cache = prefix;
    cfg.spec.method = "draft";
    cfg.spec.draft_model = draft.path();
    cfg.spec.k = 4;
    cfg.spec.disable_batch_size = 64;
    cfg.spec.cost_aware = false;  // draft for every proposal (exactness under forced speculation)
    cfg.draft_model = &draft;
    return cfg;
  }

  static std::string* dir_;
  std::unique_ptr<Model> model_, q8_, perturbed_;
};

std::string* DraftOnStories::dir_ = nullptr;

// KV budgets (stories260K: 640 bytes per token, 16-token blocks): room for
// all 16 jobs at once, and 12 blocks, which forces preemptions.
constexpr uint64_t kRoomyKv = 256ull * 16 * 640;
constexpr uint64_t kSmallKv = 12ull * 16 * 640;

TEST_F(DraftOnStories, GreedyTokensEqualTheNonSpeculativeOnesAloneAndBatched) {
  const std::vector<Job> jobs = make_jobs();
  EngineConfig plain;
  plain.ctx_size = 512;
  plain.enable_prefix_cache = false;
  std::vector<Outcome> want;
  for (const Job& j : jobs) want.push_back(run_jobs(*model_, {j}, plain)[0]);
  for (const Model* draft : {q8_.get(), perturbed_.get()}) {
    const bool same = draft == q8_.get();
    SCOPED_TRACE(same ? "Q8_0 draft" : "perturbed draft");
    EngineMetrics alone;
    for (size_t i = 0; i < jobs.size(); ++i) {
      EngineMetrics em;
      const auto got = run_jobs(*model_, {jobs[i]}, draft_config(*draft, 512, false, kRoomyKv), &em);
      expect_same(got[0], want[i], "alone, job " + std::to_string(i));
      if (!jobs[i].options.speculative) {
        EXPECT_EQ(em.spec_proposed_tokens, 0) << "job " << i;
      }
      alone.spec_proposed_tokens += em.spec_proposed_tokens;
      alone.spec_accepted_tokens += em.spec_accepted_tokens;
    }
    const double rate =
        static_cast<double>(alone.spec_accepted_tokens) / static_cast<double>(alone.spec_proposed_tokens);
    std::printf("%s: %lld of %lld proposed tokens accepted (%.1f%%)\n", same ? "Q8_0 draft" : "perturbed draft",
                static_cast<long long>(alone.spec_accepted_tokens), static_cast<long long>(alone.spec_proposed_tokens),
                100 * rate);
    // The requantized copy nearly always agrees; the perturbed one often but not always.
    EXPECT_GT(rate, same ? 0.9 : 0.3);
    if (!same) {
      EXPECT_LT(rate, 0.95);
    }
    int64_t preemptions = 0;
    for (int32_t budget : {7, 512}) {
      for (bool prefix : {true, false}) {
        for (uint64_t kv : {kRoomyKv, kSmallKv}) {
          const std::string what = "budget " + std::to_string(budget) + (prefix ? " prefix" : " no prefix") +
                                   (kv == kSmallKv ? " small KV" : " roomy KV");
          SCOPED_TRACE(what);
          EngineMetrics em;
          const auto got = run_jobs(*model_, jobs, draft_config(*draft, budget, prefix, kv), &em);
          ASSERT_EQ(got.size(), jobs.size());
          for (size_t i = 0; i < jobs.size(); ++i) expect_same(got[i], want[i], what + ", job " + std::to_string(i));
          EXPECT_GT(em.spec_accepted_tokens, 0);
          if (!same) {
            EXPECT_LT(em.spec_accepted_tokens, em.spec_proposed_tokens);  // rejections rolled back
          }
          if (kv == kSmallKv) {
            preemptions += em.preemptions;
          } else {
            EXPECT_EQ(em.preemptions, 0);
          }
        }
      }
    }
    EXPECT_GT(preemptions, 0);  // the small cache preempted speculating sequences
  }
}

TEST_F(DraftOnStories, SeededRunsRepeatAndUseTheDraftsDistribution) {
  Job j = make_jobs()[1];
  j.options.sampling.temperature = 0.8f;
  j.options.sampling.seed = 99;
  j.options.max_tokens = 40;
  EngineMetrics em;
  const auto a = run_jobs(*model_, {j}, draft_config(*perturbed_, 512, true, kRoomyKv), &em);
  const auto b = run_jobs(*model_, {j}, draft_config(*perturbed_, 7, false, kRoomyKv));
  expect_same(b[0], a[0], "seeded, twice");
  EXPECT_GT(em.spec_accepted_tokens, 0);
  EXPECT_LT(em.spec_accepted_tokens, em.spec_proposed_tokens);
}

// The cost-aware switch leaves a sampling sequence's draft lookahead alone
// (its text would otherwise follow the measured step times): with step
// times that make every proposal a loss, a seeded request still gives the
// text of a run without the switch, and proposals are still verified; a
// greedy one is declined and keeps its non-speculative tokens.
TEST_F(DraftOnStories, CostAwareSwitchKeepsSeededDraftRunsRepeatable) {
  Job seeded = make_jobs()[1];
  seeded.options.sampling.temperature = 0.8f;
  seeded.options.sampling.seed = 99;
  seeded.options.max_tokens = 40;
  const auto want = run_jobs(*model_, {seeded}, draft_config(*perturbed_, 512, true, kRoomyKv));
  EngineConfig cfg = draft_config(*perturbed_, 512, true, kRoomyKv);
  cfg.spec.cost_aware = true;
  cfg.step_ms_for_test = [](int64_t rows) { return 10.0 * static_cast<double>(rows); };
  EngineMetrics em;
  const auto got = run_jobs(*model_, {seeded}, cfg, &em);
  expect_same(got[0], want[0], "seeded, switch on and off");
  EXPECT_GT(em.spec_proposed_tokens, 0);
  EXPECT_EQ(em.spec_declined_steps, 0);

  Job greedy = make_jobs()[0];
  const auto want_greedy = run_jobs(*model_, {greedy}, draft_config(*perturbed_, 512, true, kRoomyKv));
  EngineMetrics em_greedy;
  const auto got_greedy = run_jobs(*model_, {greedy}, cfg, &em_greedy);
  expect_same(got_greedy[0], want_greedy[0], "greedy, switch on and off");
  EXPECT_GT(em_greedy.spec_declined_steps, 0) << em_greedy.spec_proposed_tokens << " proposed, " << em_greedy.decode_steps << " decode steps";
}

TEST_F(DraftOnStories, CancellingFreesTheDraftsBlocks) {
  auto engine = EngineCore::create(*model_, draft_config(*perturbed_, 512, true, kRoomyKv));
  ASSERT_TRUE(engine.ok());
  GenerationOptions o;
  o.sampling.temperature = 0;
  o.max_tokens = 100;
  o.ignore_eos = true;
  auto id = (*engine)->submit(make_jobs()[0].prompt, o, nullptr);
  ASSERT_TRUE(id.ok());
  const auto* draft = dynamic_cast<const DraftModelProposer*>((*engine)->proposer());
  ASSERT_NE(draft, nullptr);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE((*engine)->step());
    ASSERT_TRUE((*engine)->check_invariants().ok());
  }
  EXPECT_EQ(draft->num_tracked(), 1);
  EXPECT_LT(draft->num_free_blocks(), draft->num_blocks());
  (*engine)->cancel(*id);
  (*engine)->run_until_idle();
  EXPECT_TRUE((*engine)->check_invariants().ok());
  EXPECT_EQ(draft->num_tracked(), 0);
  EXPECT_EQ(draft->num_free_blocks(), draft->num_blocks());
  EXPECT_EQ((*engine)->metrics().kv_blocks_used, 0);
}

TEST_F(DraftOnStories, BadConfigurationIsRefused) {
  // Another vocabulary: one token's text differs.
  auto other = Model::load(*dir_ + "/other_vocab.gguf");
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  auto e = EngineCore::create(*model_, draft_config(**other, 512, true, kRoomyKv));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("token 300 is '<renamed>'"), std::string::npos) << e.status().message();
  // A draft without a tokenizer (the HF fixture, 512 tokens too) cannot be compared.
  TESSERA_REQUIRE_SHARED_FILE(hf, "fixtures/hf/llama_gqa/config.json");
  auto bare = Model::load(std::filesystem::path(hf).parent_path().string());
  ASSERT_TRUE(bare.ok()) << bare.status().to_string();
  e = EngineCore::create(*model_, draft_config(**bare, 512, true, kRoomyKv));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("has no tokenizer"), std::string::npos) << e.status().message();
  // "draft" without a draft model.
  EngineConfig cfg = draft_config(*q8_, 512, true, kRoomyKv);
  cfg.draft_model = nullptr;
  cfg.spec.draft_model.clear();
  e = EngineCore::create(*model_, cfg);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("--draft-model"), std::string::npos) << e.status().message();
  // The same vocabulary passes the check.
  EXPECT_TRUE(check_same_vocab(*model_, *perturbed_).ok());
}

}  // namespace
}  // namespace tessera
