// The public API (include/tessera/engine.h) as an embedding program sees it:
// errors for bad options, tokenize/detokenize, a cancelled request, metrics.
#include <gtest/gtest.h>

#include "tessera/engine.h"
#include "test_support.h"

namespace tessera {
namespace {

TEST(PublicApi, BadOptionsAreOneLineErrors) {
  EngineOptions o;
  o.model = "/nonexistent/model.gguf";
  auto e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("/nonexistent/model.gguf"), std::string::npos) << e.status().message();
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  o.model = path;
  o.kv_cache_dtype = "f12";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
  o.kv_cache_dtype = "f16";
  o.backend.device = "tpu";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
  o.backend.device = "cpu";
  o.quantize = "q3";
  EXPECT_EQ(Engine::create(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(PublicApi, TokenizeSubmitCancelMetrics) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  EngineOptions o;
  o.model = path;
  o.ctx_size = 256;
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  EXPECT_EQ(e.model_info().architecture, "llama");
  EXPECT_EQ(e.model_info().n_vocab, 512);
  EXPECT_EQ(e.model_info().context, 256);
  auto ids = e.tokenize("Once upon a time", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(*e.detokenize({403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(e.detokenize({9999}).status().code(), StatusCode::kInvalidArgument);

  GenerationOptions g;
  g.max_tokens = 200;
  g.ignore_eos = true;
  int tokens = 0;
  bool cancelled = false;
  uint64_t id = 0;
  auto r = e.submit(*ids, g, [&](const RequestEvent& ev) {
    if (ev.step.token >= 0 && ++tokens == 5) e.cancel(id);
    if (ev.request_finished) cancelled = ev.cancelled;
  });
  ASSERT_TRUE(r.ok());
  id = *r;
  e.run_until_idle();
  EXPECT_TRUE(cancelled);
  EXPECT_GE(tokens, 5);
  EXPECT_LT(tokens, 200);
  EXPECT_EQ(e.metrics().finished_cancelled, 1);
  EXPECT_EQ(e.metrics().running, 0);
}

}  // namespace
}  // namespace tessera
