// Golden test on a real trained model: stories260K (TinyStories Llama).
#include <gtest/gtest.h>

#include "backend/cpu/kernels.h"
#include "engine/generator.h"
#include "test_support.h"
#include "tokenizer/incremental_detokenizer.h"

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
    ThreadPool pool(2);
    auto gen = Generator::create(m, pool, cpu::kernels_for(isa), 0, 256);
    ASSERT_TRUE(gen.ok());
    GenerationOptions opts;
    opts.max_tokens = 64;
    opts.sampling.temperature = 0;
    IncrementalDetokenizer detok(m.tokenizer());
    std::string text;
    auto stats = (*gen)->generate(prompt, opts, [&](int32_t id) {
      text += detok.push(id);
      return true;
    });
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    text += detok.flush();
    EXPECT_EQ(stats->generated_tokens, 64);
    EXPECT_EQ(text,
              ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, "
              "red ball. She wanted to play with it, but it was too high.\nLily's mom said");
  }
}

TEST(Stories260K, PromptLongerThanContextIsAnError) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok());
  ThreadPool pool(1);
  auto gen = Generator::create(**model, pool, cpu::kernels(), 0, 32);
  ASSERT_TRUE(gen.ok());
  std::vector<int32_t> prompt(40, 300);
  auto stats = (*gen)->generate(prompt, {}, [](int32_t) { return true; });
  EXPECT_EQ(stats.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(stats.status().message().find("context holds 32"), std::string::npos) << stats.status().message();
}

}  // namespace
}  // namespace tessera
