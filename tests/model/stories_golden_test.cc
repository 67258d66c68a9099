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

}  // namespace
}  // namespace tessera
