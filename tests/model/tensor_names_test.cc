// The tensor name table (model/tensor_names.h): GGUF and transformers names
// of each role, and HfTensorSource's GGUF -> transformers mapping through it.
#include "model/tensor_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/architecture.h"
#include "model/hf_tensor_source.h"

namespace tessera {
namespace {

std::vector<TensorRole> all_roles() {
  std::vector<TensorRole> roles;
  for (const TensorNameEntry& e : kTensorNames) roles.push_back(e.role);
  return roles;
}

TEST(TensorNames, GgufNames) {
  EXPECT_EQ(gguf_tensor_name(TensorRole::kTokenEmbd), "token_embd.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kOutputNorm), "output_norm.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kOutput, 3), "output.weight");  // layer ignored
  EXPECT_EQ(gguf_tensor_name(TensorRole::kRopeFreqs), "rope_freqs.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kAttnNorm, 3), "blk.3.attn_norm.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kAttnQ, 3), "blk.3.attn_q.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kAttnQkv, 3), "blk.3.attn_qkv.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kAttnVBias, 3), "blk.3.attn_v.bias");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kAttnKNorm, 3), "blk.3.attn_k_norm.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kAttnOutput, 3), "blk.3.attn_output.weight");
  EXPECT_EQ(gguf_tensor_name(TensorRole::kFfnDown, 12), "blk.12.ffn_down.weight");
}

TEST(TensorNames, HfNames) {
  EXPECT_EQ(hf_tensor_name(TensorRole::kTokenEmbd), "model.embed_tokens.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kOutputNorm), "model.norm.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kOutput), "lm_head.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kRopeFreqs), "");  // written by the converter, not in checkpoints
  EXPECT_EQ(hf_tensor_name(TensorRole::kAttnNorm, 3), "model.layers.3.input_layernorm.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kAttnQ, 3), "model.layers.3.self_attn.q_proj.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kAttnQBias, 3), "model.layers.3.self_attn.q_proj.bias");
  EXPECT_EQ(hf_tensor_name(TensorRole::kAttnQNorm, 3), "model.layers.3.self_attn.q_norm.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kAttnQkv, 3), "model.layers.3.self_attn.qkv_proj.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kAttnOutput, 3), "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kFfnNorm, 3), "model.layers.3.post_attention_layernorm.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kFfnGate, 3), "model.layers.3.mlp.gate_proj.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kFfnUp, 3), "model.layers.3.mlp.up_proj.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kFfnUp, 3, /*fused_gate_up=*/true), "model.layers.3.mlp.gate_up_proj.weight");
  EXPECT_EQ(hf_tensor_name(TensorRole::kFfnDown, 3, /*fused_gate_up=*/true), "model.layers.3.mlp.down_proj.weight");
}

TEST(TensorNames, NamesAreDistinct) {
  for (bool fused : {false, true}) {
    std::set<std::string> gguf;
    std::set<std::string> hf;
    for (TensorRole r : all_roles()) {
      EXPECT_TRUE(gguf.insert(gguf_tensor_name(r, 3)).second) << gguf_tensor_name(r, 3);
      const std::string h = hf_tensor_name(r, 3, fused);
      if (!h.empty()) {
        EXPECT_TRUE(hf.insert(h).second) << h;
      }
    }
  }
}

// HfTensorSource::hf_name, given the GGUF name of any role, answers the
// table's transformers name, for plain and fused architectures.
TEST(TensorNames, HfTensorSourceMapsThroughTable) {
  const ArchitectureInfo* llama = find_architecture_gguf("llama");
  const ArchitectureInfo* phi3 = find_architecture_gguf("phi3");
  ASSERT_NE(llama, nullptr);
  ASSERT_NE(phi3, nullptr);
  for (const ArchitectureInfo* arch : {llama, phi3}) {
    for (TensorRole r : all_roles()) {
      for (int layer : {0, 3, 27}) {
        EXPECT_EQ(HfTensorSource::hf_name(gguf_tensor_name(r, layer), *arch),
                  hf_tensor_name(r, layer, arch->fused_gate_up))
            << gguf_tensor_name(r, layer) << " (" << arch->hf_name << ")";
      }
    }
  }
  EXPECT_EQ(HfTensorSource::hf_name("blk.3.ffn_up.weight", *phi3), "model.layers.3.mlp.gate_up_proj.weight");
  EXPECT_EQ(HfTensorSource::hf_name("blk.3.ffn_up.weight", *llama), "model.layers.3.mlp.up_proj.weight");
  EXPECT_EQ(HfTensorSource::hf_name("blk.3.attn_z.weight", *llama), "");
  EXPECT_EQ(HfTensorSource::hf_name("rope_freqs.weight", *llama), "");
  EXPECT_EQ(HfTensorSource::hf_name("blk.3", *llama), "");
}

}  // namespace
}  // namespace tessera
