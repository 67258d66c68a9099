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
#include "tessera/request_event.h"
#include "tessera/results.h"
#include "tessera/speculative_options.h"
#include "tessera/status.h"

namespace tessera {

struct EngineOptions {
  std::string model;                     // path: a .gguf file or a Hugging Face model directory
  std::string quantize;                  // "" (as stored), "q8_0", "q4_0" or "q4_k": requantize the matrices at load
  BackendOptions backend;                // device ("cpu"), threads and kernel switches
  int64_t ctx_size = 0;                  // tokens of one sequence; 0: min(the model's trained context, 4096)
  uint64_t kv_cache_memory = 0;          // bytes for the KV cache; 0: sized by ctx_size
  std::string kv_cache_dtype = "f16";    // "f16", "bf16", "f32", "int8" or "fp8"
  int32_t max_num_seqs = 64;             // sequences running at once
  int32_t max_num_batched_tokens = 512;  // tokens per step (prefill chunks)
  bool enable_prefix_cache = true;       // reuse KV blocks of shared prompt prefixes
  SpeculativeOptions spec;               // speculative decoding (off unless spec.method is set)
};

// What the loaded model is.
struct ModelInfo {
  std::string path;
  std::string architecture;  // e.g. "llama", "qwen2"
  int32_t n_layers = 0;
  int32_t n_vocab = 0;
  int64_t trained_context = 0;  // the model's own context length
  int64_t context = 0;          // tokens one sequence may hold in this engine
  bool has_tokenizer = false;
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
  // One line saying how the model runs, e.g. "cpu avx2, 2 threads, no tile kernels".
  std::string backend_description() const;

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
