#include "model/hf_tensor_source.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace tessera {

namespace {

// Per-layer names: GGUF suffix after "blk.N." -> transformers suffix after "model.layers.N.".
constexpr std::array<std::pair<std::string_view, std::string_view>, 17> kLayerNames = {{
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_qkv.weight", "self_attn.qkv_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_gate_up.weight", "mlp.gate_up_proj.weight"},
    {"output.weight", "lm_head.weight"},
}};

}  // namespace

std::string HfTensorSource::hf_name(const std::string& gguf_name, const ArchitectureInfo& arch) {
  if (gguf_name == "token_embd.weight") return "model.embed_tokens.weight";
  if (gguf_name == "output_norm.weight") return "model.norm.weight";
  if (gguf_name == "output.weight") return "lm_head.weight";
  if (gguf_name.rfind("blk.", 0) != 0) return {};
  const size_t dot = gguf_name.find('.', 4);
  if (dot == std::string::npos) return {};
  const std::string layer = gguf_name.substr(4, dot - 4);
  std::string suffix = gguf_name.substr(dot + 1);
  // GGUF stores Phi-3's fused gate_up projection as ffn_up.
  if (arch.fused_gate_up && suffix == "ffn_up.weight") suffix = "ffn_gate_up.weight";
  for (const auto& [g, h] : kLayerNames) {
    if (suffix == g) return "model.layers." + layer + "." + std::string(h);
  }
  return {};
}

std::optional<TensorRef> HfTensorSource::find(const std::string& gguf_name) const {
  const std::string name = hf_name(gguf_name, arch_);
  if (name.empty()) return std::nullopt;
  const SafetensorsTensor* t = checkpoint_.find(name);
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> shape(t->shape.rbegin(), t->shape.rend());
  return TensorRef{t->name, t->dtype, dtype_name(t->dtype), std::move(shape), t->data};
}

}  // namespace tessera
