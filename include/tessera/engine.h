// tessera's public C++ API: an Engine loads a model (a GGUF file or a
// Hugging Face directory), runs it on a backend, and serves many requests at
// once with continuous batching over a paged KV cache. This header and the
// tessera/ headers it includes are the whole interface; the implementation
// (scheduler, KV manager, sampler, model graph, backends) stays hidden.
//
//   auto engine = tessera::Engine::create({.model = "stories260K.gguf"});
//   auto prompt = (*engine)->tokenize("Once upon a time", true);
//   (*engine)->submit(*prompt, options, [](const tessera::RequestEvent& ev) { ... });
//   (*engine)->run_until_idle();
//
// Threading: submit() and cancel() may be called from any thread. Callbacks
// run on the thread that steps the engine: the caller's in run_until_idle(),
// a background thread after start().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/backend_options.h"
#include "tessera/engine_metrics.h"
#include "tessera/generation_options.h"
#include "tessera/parallel.h"
#include "tessera/request_event.h"
#include "tessera/request_outcome.h"
#include "tessera/results.h"
#include "tessera/speculative_options.h"
#include "tessera/status.h"
#include "tessera/vocab.h"

namespace tessera {

struct EngineOptions {
  std::string model;  // path: a .gguf file or a Hugging Face model directory
  // "" (as stored), "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "q6_k", "q5_k",
  // "q4_k", "q3_k", "q2_k", or one of llama.cpp's mixes "q3_k_s", "q3_k_m",
  // "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m" (the types `tessera
  // quantize` gives each matrix): requantize the matrices at load (those
  // whose rows fit their type's block; K-quants need rows of a multiple of
  // 256). Other names: kInvalidArgument from Engine::create.
  std::string quantize;
  // Check every weight value for Inf/NaN at load (--check-tensors; a pass
  // over the whole file). Without it only the quantized blocks' scales and
  // the norms/biases are checked. Errors name the tensor and row.
  bool check_tensors = false;
  BackendOptions backend;        // device ("cpu"), threads and kernel switches
  int64_t ctx_size = 0;          // tokens of one sequence; 0: min(the model's trained context, 4096)
  uint64_t kv_cache_memory = 0;  // bytes for the KV cache; 0: sized by ctx_size
  // "auto" (the weights' float type for F32/F16/BF16 models, f16 for
  // quantized ones, as vLLM's auto), "f16", "bf16", "f32", "int8" or "fp8".
  std::string kv_cache_dtype = "auto";
  int32_t max_num_seqs = 64;             // sequences running at once
  int32_t max_num_batched_tokens = 512;  // tokens per step (prefill chunks)
  bool enable_prefix_cache = true;       // reuse KV blocks of shared prompt prefixes
  SpeculativeOptions spec;               // speculative decoding (off unless spec.method is set)
  // Tensor/pipeline parallelism across MPI ranks (tessera/parallel.h); the
  // default runs in this process alone. KV memory is per rank.
  ParallelOptions parallel;
};

// The names EngineOptions::quantize (`--quantize`) accepts, lower case: the
// block types with tile kernels on every SIMD path, then the mixes.
std::vector<std::string> load_quantize_type_names();

// What the loaded model is.
struct ModelInfo {
  std::string path;
  std::string architecture;  // e.g. "llama", "qwen2"
  int32_t n_layers = 0;
  int32_t n_vocab = 0;
  int64_t trained_context = 0;  // the model's own context length
  int64_t context = 0;          // tokens one sequence may hold in this engine
  bool has_tokenizer = false;
  int32_t n_embd = 0;      // hidden size
  int32_t n_ff = 0;        // feed-forward (MLP) width
  int32_t n_heads = 0;     // query heads
  int32_t n_kv_heads = 0;  // key/value heads (GQA: n_heads is a multiple)
  int32_t head_dim = 0;
  uint64_t weight_bytes = 0;  // bytes of the weight matrices as the backend runs them (what decode reads per step)
  // With EngineOptions::quantize: the weight matrices requantized at load,
  // of those considered (the output and every layer's seven; the token
  // embedding never is). A matrix whose row length is not a multiple of the
  // type's block (32, or 256 for q4_k / q5_k), or that already has the
  // type, keeps its own. Both 0 without quantize.
  int32_t quantized_matrices = 0;
  int32_t quantize_candidates = 0;
};

// The paged KV cache the engine allocated (architecture.md "The KV cache").
struct KvCacheInfo {
  std::string dtype;             // "f16", "bf16", "f32", "int8" or "fp8"
  int64_t num_blocks = 0;        // blocks in the pool
  int32_t block_size = 0;        // tokens per block
  int64_t capacity_tokens = 0;   // num_blocks * block_size
  uint64_t bytes_per_token = 0;  // K and V of every layer for one token
  uint64_t total_bytes = 0;      // the pool's memory
};

class Engine {
 public:
  using Callback = std::function<void(const RequestEvent&)>;

  // Loads the model and prepares it on the backend. Errors (one line each,
  // naming the file or option): a missing or corrupt model, an unknown
  // device or KV dtype, a weight type the backend cannot run, no memory.
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& model_info() const;
  // One line saying how the model runs, e.g. "cpu avx2, 2 threads, no tile kernels"; in a parallel
  // run followed by ", rank 0 of 4 (tensor parallel 2 x pipeline parallel 2; KV cache per rank)".
  std::string backend_description() const;
  const KvCacheInfo& kv_cache_info() const;
  // The model's vocabulary and tokenizer; null when the model file has none
  // (then prompts are token ids). Owned by the engine.
  const Vocab* vocab() const;
  // The read bandwidth of the backend's memory in bytes/s, measured now on
  // the backend's own threads (the roofline for decode). Call it only while
  // no step runs (not after start()).
  double measure_read_bandwidth();

  // Token ids of `text` (with BOS etc. when add_special). Errors: no tokenizer.
  Result<std::vector<int32_t>> tokenize(std::string_view text, bool add_special) const;
  // Text of `ids` (ids outside the vocabulary are an error).
  Result<std::string> detokenize(const std::vector<int32_t>& ids) const;

  // Queues a request (thread-safe); returns its id. Errors, at once: invalid
  // options, an empty prompt, one that can never fit the context or cache.
  // `on_event` gets every streamed step and, last, the finished event with
  // results and metrics. `priority`: lower runs first.
  Result<uint64_t> submit(std::vector<int32_t> prompt, const GenerationOptions& options, Callback on_event,
                          int32_t priority = 0);
  // Cancels a request (thread-safe); its callback gets a finished event with cancelled = true.
  void cancel(uint64_t request_id);

  // Steps until every submitted request has finished (on this thread).
  void run_until_idle();
  // submit() then run_until_idle(): one request on the caller's thread, its
  // results and metrics. on_step sees each streamed step that carries a
  // token or text. Errors: submit's, or the request's own.
  Result<RequestOutcome> generate(std::vector<int32_t> prompt, const GenerationOptions& options,
                                  const std::function<void(const StreamEvent&)>& on_step = {});
  // Runs the step loop on a background thread until stop() (or destruction).
  void start();
  void stop();

  EngineMetrics metrics() const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
