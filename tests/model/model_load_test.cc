// Loading models: hyperparameters from metadata, and clear errors for files
// that are not runnable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <unistd.h>

#include "formats/gguf_writer.h"
#include "model/model.h"
#include "test_support.h"

namespace tessera {
namespace {

TEST(ModelLoad, Stories260KConfig) {
  TESSERA_REQUIRE_SHARED_FILE(path, "models/stories260K.gguf");
  auto m = Model::load(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.n_vocab, 512);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_ff, 172);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.n_rot, 8);
  EXPECT_EQ(c.context_length, 2048);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_FALSE((*m)->weights().output.data == (*m)->weights().token_embd.data);  // separate head
}

TEST(ModelConfig, Llama3RopeScaling) {
  ModelConfig c;
  c.n_rot = 128;
  c.rope_freq_base = 500000.0f;
  c.rope_scaling = {RopeScalingType::kLlama3, 8.0f, 1.0f, 4.0f, 8192};
  const auto inv = c.rope_inv_freq();
  // High frequencies (short wavelengths) are unchanged, low ones divided by the factor.
  EXPECT_FLOAT_EQ(inv[0], 1.0f);
  const double base_last = std::pow(500000.0, -126.0 / 128);
  EXPECT_NEAR(inv[63], base_last / 8.0, 1e-12);
  for (size_t i = 1; i < inv.size(); ++i) EXPECT_LT(inv[i], inv[i - 1]);
}

// Rewrites stories260K through `edit` (which may change metadata or tensors) into a temp file.
class ModelEdits : public ::testing::Test {
 protected:
  std::string rewrite(const std::string& src, const std::function<void(const GgufKeyValue*, const GgufTensorInfo*,
                                                                         GgufWriter&, bool&)>& edit) {
    auto g = GgufFile::open(src);
    EXPECT_TRUE(g.ok());
    GgufWriter w;
    for (const auto& kv : g->metadata()) {
      bool keep = true;
      edit(&kv, nullptr, w, keep);
      if (keep) w.add_value(kv.key, kv.value);
    }
    for (const auto& t : g->tensors()) {
      bool keep = true;
      edit(nullptr, &t, w, keep);
      if (keep) w.add_tensor(t.name, t.shape, *t.dtype, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    }
    path_ = (std::filesystem::temp_directory_path() / ("tessera_edit_" + std::to_string(::getpid()) + ".gguf")).string();
    EXPECT_TRUE(w.write(path_).ok());
    return path_;
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::string path_;
};

TEST_F(ModelEdits, MissingTensorIsNamed) {
  TESSERA_REQUIRE_SHARED_FILE(src, "models/stories260K.gguf");
  const auto p = rewrite(src, [](const GgufKeyValue*, const GgufTensorInfo* t, GgufWriter&, bool& keep) {
    if (t && t->name == "blk.3.ffn_up.weight") keep = false;
  });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("blk.3.ffn_up.weight"), std::string::npos) << m.status().message();
}

TEST_F(ModelEdits, WrongShapeIsNamed) {
  TESSERA_REQUIRE_SHARED_FILE(src, "models/stories260K.gguf");
  const auto p = rewrite(src, [](const GgufKeyValue* kv, const GgufTensorInfo*, GgufWriter& w, bool& keep) {
    if (kv && kv->key == "llama.feed_forward_length") {
      keep = false;
      w.add_uint32(kv->key, 100);
    }
  });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("ffn_gate.weight' has shape"), std::string::npos) << m.status().message();
}

TEST_F(ModelEdits, UnsupportedArchitectureIsNamed) {
  TESSERA_REQUIRE_SHARED_FILE(src, "models/stories260K.gguf");
  const auto p = rewrite(src, [](const GgufKeyValue* kv, const GgufTensorInfo*, GgufWriter& w, bool& keep) {
    if (kv && kv->key == "general.architecture") {
      keep = false;
      w.add_string(kv->key, "mamba");
    }
  });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(m.status().message().find("mamba"), std::string::npos);
}

TEST_F(ModelEdits, InconsistentHeadsRejected) {
  TESSERA_REQUIRE_SHARED_FILE(src, "models/stories260K.gguf");
  const auto p = rewrite(src, [](const GgufKeyValue* kv, const GgufTensorInfo*, GgufWriter& w, bool& keep) {
    if (kv && kv->key == "llama.attention.head_count_kv") {
      keep = false;
      w.add_uint32(kv->key, 3);
    }
  });
  auto m = Model::load(p);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("head_count_kv"), std::string::npos) << m.status().message();
}

TEST(ModelLoad, MissingFile) {
  auto m = Model::load("/nonexistent/model.gguf");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace tessera
