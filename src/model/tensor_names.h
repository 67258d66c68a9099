// The one table of tensor names of a Llama-family decoder (Llama, Mistral,
// Qwen2, Qwen3, Phi-3): every weight tensor tessera reads or writes, named
// once, in two spellings.
//
// - GGUF names follow llama.cpp's convention, which the GGUF specification
//   standardizes ("Standardized tensor names" in ggml's docs/gguf.md; the
//   authoritative list is MODEL_TENSOR / TENSOR_NAMES in llama.cpp's
//   gguf-py/gguf/constants.py): global tensors by name ("token_embd.weight"),
//   per-layer tensors as "blk.N." + suffix ("blk.3.attn_q.weight").
// - Hugging Face names are the module paths of transformers' Llama modeling
//   code (transformers/models/llama/modeling_llama.py: LlamaForCausalLM with
//   model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
//   post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head)
//   plus the modules Qwen2 (q/k/v_proj biases), Qwen3 (self_attn.q_norm,
//   k_norm) and Phi-3 (self_attn.qkv_proj, mlp.gate_up_proj) add. Per-layer
//   names are "model.layers.N." + suffix.
//
// Shapes below are in ggml order: ne[0], the contiguous dimension, first (a
// [rows, cols] matrix is {cols, rows}). safetensors lists the same shapes in
// reverse. q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim.
//
// Which tensors a model has depends on its architecture (model/architecture.h);
// the table only names them. Code that reads or writes tensors spells their
// names through gguf_tensor_name() / hf_tensor_name(), never as literals.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

enum class TensorRole : uint8_t {
  // Global tensors.
  kTokenEmbd,   // token_embd.weight  {n_embd, n_vocab}  token embeddings; all architectures
  kOutputNorm,  // output_norm.weight {n_embd}  final RMSNorm; all architectures
  kOutput,      // output.weight      {n_embd, n_vocab}  LM head; absent when tied to token_embd
  kRopeFreqs,   // rope_freqs.weight  {n_rot / 2} f32  Llama 3 RoPE frequency divisors; GGUF only
                //                    (written by the converter from config.json's rope_scaling)
  // Per-layer tensors (blk.N.*).
  kAttnNorm,    // attn_norm.weight   {n_embd}  RMSNorm before attention; all architectures
  kAttnQ,       // attn_q.weight      {n_embd, q_dim}  query projection; all but Phi-3
  kAttnK,       // attn_k.weight      {n_embd, kv_dim}  key projection; all but Phi-3
  kAttnV,       // attn_v.weight      {n_embd, kv_dim}  value projection; all but Phi-3
  kAttnQkv,     // attn_qkv.weight    {n_embd, q_dim + 2 * kv_dim}  fused q, k, v rows; Phi-3
  kAttnQBias,   // attn_q.bias        {q_dim}  Qwen2
  kAttnKBias,   // attn_k.bias        {kv_dim}  Qwen2
  kAttnVBias,   // attn_v.bias        {kv_dim}  Qwen2
  kAttnQNorm,   // attn_q_norm.weight {head_dim}  RMSNorm of each query head; Qwen3
  kAttnKNorm,   // attn_k_norm.weight {head_dim}  RMSNorm of each key head; Qwen3
  kAttnOutput,  // attn_output.weight {q_dim, n_embd}  attention output projection; all architectures
  kFfnNorm,     // ffn_norm.weight    {n_embd}  RMSNorm before the MLP; all architectures
  kFfnGate,     // ffn_gate.weight    {n_embd, n_ff}  SwiGLU gate; all but Phi-3
  kFfnUp,       // ffn_up.weight      {n_embd, n_ff}  SwiGLU up; Phi-3: {n_embd, 2 * n_ff}, the fused
                //                    gate_up projection, gate rows first
  kFfnDown,     // ffn_down.weight    {n_ff, n_embd}  MLP down projection; all architectures
};

struct TensorNameEntry {
  TensorRole role;
  bool per_layer;             // the names below follow "blk.N." / "model.layers.N."
  std::string_view gguf;      // llama.cpp / GGUF name
  std::string_view hf;        // transformers name; empty where checkpoints have none
  std::string_view hf_fused;  // transformers name in architectures that fuse this projection with its
                              // partner (ArchitectureInfo::fused_gate_up); empty where none
};

inline constexpr std::string_view kGgufLayerPrefix = "blk.";
inline constexpr std::string_view kHfLayerPrefix = "model.layers.";

// One entry per role, in TensorRole order.
inline constexpr std::array kTensorNames = {
    // clang-format off
    //              role, per_layer, gguf, hf, hf_fused
    TensorNameEntry{TensorRole::kTokenEmbd,   false, "token_embd.weight",  "model.embed_tokens.weight",       {}},
    TensorNameEntry{TensorRole::kOutputNorm,  false, "output_norm.weight", "model.norm.weight",               {}},
    TensorNameEntry{TensorRole::kOutput,      false, "output.weight",      "lm_head.weight",                  {}},
    TensorNameEntry{TensorRole::kRopeFreqs,   false, "rope_freqs.weight",  {},                                {}},
    TensorNameEntry{TensorRole::kAttnNorm,    true,  "attn_norm.weight",   "input_layernorm.weight",          {}},
    TensorNameEntry{TensorRole::kAttnQ,       true,  "attn_q.weight",      "self_attn.q_proj.weight",         {}},
    TensorNameEntry{TensorRole::kAttnK,       true,  "attn_k.weight",      "self_attn.k_proj.weight",         {}},
    TensorNameEntry{TensorRole::kAttnV,       true,  "attn_v.weight",      "self_attn.v_proj.weight",         {}},
    TensorNameEntry{TensorRole::kAttnQkv,     true,  "attn_qkv.weight",    "self_attn.qkv_proj.weight",       {}},
    TensorNameEntry{TensorRole::kAttnQBias,   true,  "attn_q.bias",        "self_attn.q_proj.bias",           {}},
    TensorNameEntry{TensorRole::kAttnKBias,   true,  "attn_k.bias",        "self_attn.k_proj.bias",           {}},
    TensorNameEntry{TensorRole::kAttnVBias,   true,  "attn_v.bias",        "self_attn.v_proj.bias",           {}},
    TensorNameEntry{TensorRole::kAttnQNorm,   true,  "attn_q_norm.weight", "self_attn.q_norm.weight",         {}},
    TensorNameEntry{TensorRole::kAttnKNorm,   true,  "attn_k_norm.weight", "self_attn.k_norm.weight",         {}},
    TensorNameEntry{TensorRole::kAttnOutput,  true,  "attn_output.weight", "self_attn.o_proj.weight",         {}},
    TensorNameEntry{TensorRole::kFfnNorm,     true,  "ffn_norm.weight",    "post_attention_layernorm.weight", {}},
    TensorNameEntry{TensorRole::kFfnGate,     true,  "ffn_gate.weight",    "mlp.gate_proj.weight",            {}},
    TensorNameEntry{TensorRole::kFfnUp,       true,  "ffn_up.weight",      "mlp.up_proj.weight",              "mlp.gate_up_proj.weight"},
    TensorNameEntry{TensorRole::kFfnDown,     true,  "ffn_down.weight",    "mlp.down_proj.weight",            {}},
    // clang-format on
};

constexpr bool tensor_names_in_role_order() {
  for (size_t i = 0; i < kTensorNames.size(); ++i) {
    if (static_cast<size_t>(kTensorNames[i].role) != i) return false;
  }
  return true;
}
static_assert(tensor_names_in_role_order(), "kTensorNames must list every TensorRole once, in enum order");

constexpr const TensorNameEntry& tensor_name_entry(TensorRole role) {
  return kTensorNames[static_cast<size_t>(role)];
}

// The transformers name of `role` (after "model.layers.N." for per-layer
// roles): hf_fused with `fused_gate_up` where the role has one, else hf.
constexpr std::string_view hf_tensor_suffix(TensorRole role, bool fused_gate_up = false) {
  const TensorNameEntry& e = tensor_name_entry(role);
  return fused_gate_up && !e.hf_fused.empty() ? e.hf_fused : e.hf;
}

// The GGUF name of `role`: "token_embd.weight"; "blk.3.attn_q.weight" for
// per-layer roles (`layer` is ignored for global ones).
std::string gguf_tensor_name(TensorRole role, int layer = 0);

// The transformers name of `role`: "model.embed_tokens.weight";
// "model.layers.3.self_attn.q_proj.weight" for per-layer roles. With
// `fused_gate_up` (Phi-3), ffn_up names mlp.gate_up_proj. Empty where
// checkpoints have no such tensor (rope_freqs).
std::string hf_tensor_name(TensorRole role, int layer = 0, bool fused_gate_up = false);

}  // namespace tessera
