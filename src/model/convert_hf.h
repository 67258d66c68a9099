// Hugging Face directory (config.json, *.safetensors, optional tokenizer.json)
// -> GGUF v3 file, written the way llama.cpp's convert_hf_to_gguf.py does so
// that tessera and other GGUF readers load it (GGUF spec: github.com/ggml-org/
// ggml docs/gguf.md, "Standardized key-value pairs" and "Tensor names").
//
// Metadata: general.{architecture, name, file_type, quantization_version},
// <arch>.{context_length, embedding_length, block_count, feed_forward_length,
// attention.head_count, attention.head_count_kv, attention.key_length and
// value_length (only when head_dim != n_embd / n_heads), rope.dimension_count,
// rope.freq_base, attention.layer_norm_rms_epsilon}; linear RoPE scaling as
// rope.scaling.{type = "linear", factor}. Llama 3 RoPE scaling is stored as
// llama.cpp stores it: no scaling keys, and an f32 tensor `rope_freqs.weight`
// [n_rot / 2] of per-frequency divisors (model_config.h reads it back).
//
// Tensors: token_embd, output_norm, output (omitted when the embeddings are
// tied), blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
// ffn_gate, ffn_up, ffn_down}; attn_{q,k,v}.bias (Qwen2), attn_{q,k}_norm
// (Qwen3), attn_qkv and a fused ffn_up = [gate; up] (Phi-3). Norms and biases
// are f32; matrices use the requested type. Llama/Mistral attn_q and attn_k
// rows are permuted per head for adjacent-pair RoPE (llama_rope_row()).
//
// Tokenizer (only when the directory has tokenizer.json): tokenizer.ggml.
// {model, pre, tokens, scores, token_type, merges (gpt2), bos/eos/unknown/
// padding_token_id, add_bos_token, add_eos_token, add_space_prefix (llama)}
// and tokenizer.chat_template, from the Vocabulary tessera loaded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "formats/gguf_writer.h"
#include "tessera/status.h"
#include "tessera/tools.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

struct ConvertOptions {
  // Type of the 2-D weight matrices: kF32, kF16, kBF16 or kQ8_0. A matrix
  // whose row length is not a multiple of 32 is written as f16 under kQ8_0
  // (and a note says so).
  DType dtype = DType::kF16;
};

// What a conversion wrote (the public tools::ConvertSummary, tessera/tools.h).
using ConvertSummary = tools::ConvertSummary;

// Converts the model in `hf_dir` and writes `out_path`. The directory is
// loaded (and validated) exactly as Model::load does. Every tensor is held in
// memory until the file is written. Errors: those of Model::load, an
// unsupported --dtype (kInvalidArgument), an odd head_dim for a Llama
// permutation (kInvalidArgument), I/O failures (kInternal).
Result<ConvertSummary> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                          const ConvertOptions& options);

// The Hugging Face row that row `row` of a converted Llama attn_q/attn_k
// matrix holds: llama.cpp's permute() reorders each head's rows from
// [2, head_dim / 2] to [head_dim / 2, 2], so that adjacent rows form a RoPE
// pair. `head_dim` must be even.
int64_t llama_rope_row(int64_t row, int64_t head_dim);

// llama.cpp's general.file_type (enum llama_ftype) for matrices of `dtype`:
// 0 all f32, 1 mostly f16, 7 mostly q8_0, 32 mostly bf16, 2 mostly q4_0.
uint32_t gguf_file_type(DType dtype);

// Adds the tokenizer.ggml.* and tokenizer.chat_template metadata describing
// `tok` (loaded from tokenizer.json) padded with unused "[PADi]" tokens to
// `n_vocab` entries. `pre` is written as tokenizer.ggml.pre for gpt2 models.
// "llama" (SentencePiece-style, byte fallback) vocabularies get scores
// -rank from the merge that first builds each token. `eos_fallback` is used
// when the tokenizer has no EOS (generation_config.json). Returns the
// tokenizer.ggml.model written ("gpt2" or "llama").
std::string add_tokenizer_metadata(GgufWriter& w, const Tokenizer& tok, int n_vocab, const std::string& pre,
                                   int32_t eos_fallback);

}  // namespace tessera
