// Golden test on a real trained model: stories260K (TinyStories Llama).
#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "model_test_util.h"
#include "test_support.h"

namespace tessera {
namespace {

TEST(Stories260K, GreedyContinuationMatchesReference) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  const auto prompt = m.tokenizer().encode("Once upon a time", true);
  ASSERT_EQ(prompt, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_name(isa));
    auto gen = testing::make_engine(m, testing::cpu_backend(2, isa), 0, 256);
    ASSERT_TRUE(gen.ok());
    GenerationOptions opts;
    opts.max_tokens = 64;
    opts.sampling.temperature = 0;
    std::string streamed;
    auto result = run_to_completion(**gen, prompt, opts, [&](const StreamEvent& ev) { streamed += ev.text; });
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    EXPECT_EQ(result->metrics.generated_tokens, 64);
    EXPECT_EQ(result->choices[0].finish, FinishReason::kLength);
    EXPECT_EQ(streamed, result->choices[0].text);
    EXPECT_EQ(streamed,
              ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
              "red ball. She wanted to play with it, but it was too high.\nLily's mom said");
  }
}

TEST(Stories260K, PromptLongerThanContextIsAnError) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok());
  auto gen = testing::make_engine(**model, testing::cpu_backend(1), 0, 32);
  ASSERT_TRUE(gen.ok());
  std::vector<int32_t> prompt(40, 300);
  auto result = run_to_completion(**gen, prompt, {});
  EXPECT_EQ(result.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(result.status().message().find("context holds 32"), std::string::npos) << result.status().message();
}

// A prompt exactly as long as the context (and the KV cache: 32 tokens, two
// blocks) is refused when a token is to be generated, and scored when none
// is (max_tokens 0, as `run -n 0` and prompt scoring ask): its logits are
// those of an engine with room to spare, and the request ends with "length".
TEST(Stories260K, PromptFillingTheContextIsScoredWhenNothingIsGenerated) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok());
  const Model& m = **model;
  std::vector<int32_t> prompt = m.tokenizer().encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends "
      "and her dog.",
      true);
  ASSERT_GE(prompt.size(), 32u);
  prompt.resize(32);
  auto full = testing::make_engine(m, testing::cpu_backend(1), 0, 32);
  auto roomy = testing::make_engine(m, testing::cpu_backend(1), 0, 64);
  ASSERT_TRUE(full.ok() && roomy.ok());
  ASSERT_EQ((*full)->kv_spec().capacity_tokens(), 32);
  GenerationOptions one;
  one.max_tokens = 1;
  auto refused = run_to_completion(**full, prompt, one);
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(refused.status().message().find("must leave room for a generated token"), std::string::npos)
      << refused.status().message();
  GenerationOptions none;
  none.max_tokens = 0;
  auto scored = run_to_completion(**full, prompt, none);
  ASSERT_TRUE(scored.ok()) << scored.status().to_string();
  EXPECT_EQ(scored->metrics.generated_tokens, 0);
  EXPECT_EQ(scored->choices[0].finish, FinishReason::kLength);
  const std::vector<float> got = testing::all_logits(**full, prompt);
  const std::vector<float> want = testing::all_logits(**roomy, prompt);
  ASSERT_EQ(got.size(), prompt.size() * static_cast<size_t>(m.config().n_vocab));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << "logit " << i;
}

}  // namespace
}  // namespace tessera
