// Model-file tools behind `tessera convert`, `quantize`, `random-model` and
// `inspect`: each reads and writes files only (no engine), returns a summary
// or one error line naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/parallel.h"
#include "tessera/status.h"

namespace tessera::tools {

// ---- convert: a Hugging Face directory -> one GGUF v3 file -------------------
// Reads config.json, the *.safetensors files (single or sharded) and
// tokenizer.json; writes llama.cpp's tensor names and metadata (GGUF spec:
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), with the Llama
// q/k RoPE row permutation.
struct ConvertOptions {
  // Type of the 2-D weight matrices: "f32", "f16", "bf16" or "q8_0" (norms
  // stay f32; under q8_0 a matrix whose rows are not whole 32-element blocks
  // is written as f16, and a note says so).
  std::string dtype = "f16";
};
struct ConvertSummary {
  int n_tensors = 0;
  int64_t n_parameters = 0;
  uint64_t tensor_bytes = 0;  // bytes of tensor data written
  bool wrote_tokenizer = false;
  std::vector<std::string> notes;  // fallbacks and choices worth telling the user
};
// Errors: a missing/corrupt input, an unknown dtype, an unsupported architecture, an unwritable output.
Result<ConvertSummary> convert_hf(const std::string& hf_dir, const std::string& out_path,
                                  const ConvertOptions& options);
std::vector<std::string> convert_dtype_names();  // {"f32", "f16", "bf16", "q8_0"}

// ---- quantize: a GGUF file (or Hugging Face directory) -> another type -------
struct QuantizeSummary {
  int n_tensors = 0;
  int n_quantized = 0;
  uint64_t bytes_in = 0;           // tensor data read
  uint64_t bytes_out = 0;          // tensor data written
  std::vector<std::string> notes;  // one line per fallback
};
// Called after each tensor: (tensors done, tensors in all, the tensor's name).
using Progress = std::function<void(int done, int total, const std::string& name)>;
// `type`: a block format ("q8_0", "q4_0", "q4_k", ...), "f16"/"bf16"/"f32",
// or a mix ("q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s",
// "q5_k_m": llama.cpp's tensor-by-tensor choices, listed in src/model/quantize_model.h).
// `threads` >= 1. Errors: an unknown type, a missing/corrupt input, non-finite weights, an unwritable output,
// an output that is the input file itself (kInvalidArgument; the input is left alone), an output directory
// that does not exist (kNotFound, before any tensor is read).
Result<QuantizeSummary> quantize(const std::string& in_path, const std::string& out_path, const std::string& type,
                                 int threads, const Progress& progress = nullptr);
std::vector<std::string> quantize_type_names();
// The temporary f32 GGUF quantize writes next to `out_path` while it converts a Hugging Face
// directory (4 bytes per parameter; quantize removes it, also on errors). A caller that may be
// killed during the conversion can remove it from its signal handler.
std::string quantize_temporary_path(const std::string& out_path);

// ---- random-model: a random-weight GGUF in a real model's shape --------------
// `shape`: one of random_model_shape_names() ("tinyllama-1.1b", ...);
// `dtype`: one of quantize_type_names(). Same seed, same file.
// `greedy_cycle` >= 1: weights under which greedy decoding cycles with that
// period (a synthetic repetitive model for speculative-decoding benchmarks;
// see RandomModelShape::greedy_cycle in src/model/random_model.h); 0: plain.
// Matrices whose rows do not fit the type's block (the "tiny" shape's 64-wide
// rows under a 256-element K-quant) fall back as in quantize, one note each.
// Errors: an unknown shape or type, a cycle longer than the vocabulary, an unwritable output.
struct RandomModelSummary {
  std::vector<std::string> notes;  // one line per fallback
};
Result<RandomModelSummary> write_random_model(const std::string& shape, const std::string& dtype, uint64_t seed,
                                              int threads, const std::string& out_path, int greedy_cycle = 0);
std::vector<std::string> random_model_shape_names();

// ---- inspect: what a model file holds ---------------------------------------
// The text `tessera inspect` prints: metadata, the tensor table, parameter and
// weight byte counts, the model configuration and the KV bytes per token.
// Errors: a missing or corrupt file (a model config that does not parse is a
// line of the report, not an error).
Result<std::string> inspect(const std::string& path);
// The same, followed by what each rank of a tensor/pipeline-parallel run
// would hold (tessera/parallel.h, docs/parallelism.md): its stage's layers,
// heads, KV heads, FFN and vocabulary rows, the weight bytes it prepares and
// its KV bytes per token, so a cluster can be planned. Errors: inspect's, and
// a layout the model's shape does not split into (the engine's message).
Result<std::string> inspect(const std::string& path, const ParallelOptions& parallel);

}  // namespace tessera::tools
