#include "cli_common.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

#include "backend/registry.h"
#include "core/byte_size.h"
#include "core/cpu_features.h"

namespace tessera::cli {

void add_engine_flags(CLI::App& app, EngineFlags& f) {
  app.add_option("-m,--model", f.model, "Model: a GGUF file or a Hugging Face directory")->required();
  app.add_option("-t,--threads", f.threads, "Worker threads (default: physical cores)")->check(CLI::Range(1, 1024));
  app.add_option("-c,--ctx-size", f.ctx_size,
                 "Context size in tokens; sizes the KV cache (default: min(trained, 4096))")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--kv-cache-memory", f.kv_cache_memory,
                 "KV cache memory budget, e.g. 64MiB or 2GiB (overrides --ctx-size)");
  app.add_option("--kv-cache-dtype", f.kv_cache_dtype, "KV cache element type")
      ->check(CLI::IsMember({"f16", "bf16", "f32", "int8", "fp8"}));
  app.add_option("--quantize", f.quantize, "Quantize the weight matrices at load time")
      ->check(CLI::IsMember({"q8_0", "q4_0", "q4_k"}));
  std::string devices;
  for (const std::string& n : backend_names()) devices += (devices.empty() ? "" : ", ") + n;
  app.add_option("--device", f.device, "Backend that runs the model (this build has: " + devices + ")")
      ->check(CLI::IsMember(backend_names()));
}

Isa isa_from_environment() {
  // A path this CPU lacks leaves the best one (as the variable always did).
  if (const char* v = std::getenv("TESSERA_ISA"); v != nullptr && *v != '\0') {
    if (auto isa = isa_from_name(v); isa && *isa < best_isa()) return *isa;
  }
  return best_isa();
}

BackendOptions backend_options(const EngineFlags& f) {
  BackendOptions o;
  o.device = f.device;
  o.threads = resolve_threads(f);
  // The environment aliases of the kernel switches (README "Build"); main()
  // has already refused malformed values.
  if (const Isa isa = isa_from_environment(); isa != best_isa()) o.isa = isa;
  if (const char* v = std::getenv("TESSERA_TILED_GEMM"); v != nullptr && std::string(v) == "0") o.tile_kernels = false;
  if (const char* v = std::getenv("TESSERA_DECODE_STREAMS"); v != nullptr && v[0] >= '1' && v[0] <= '4' && v[1] == 0) {
    o.decode_streams = v[0] - '0';
  }
  return o;
}

LoadOptions load_options(const EngineFlags& f) {
  LoadOptions o;
  if (!f.quantize.empty()) o.quantize = dtype_from_name(f.quantize);
  return o;
}

KvDtype kv_dtype(const EngineFlags& f) {
  return *kv_dtype_from_name(f.kv_cache_dtype);
}

int64_t context_size(const EngineFlags& f, const ModelConfig& config) {
  return f.ctx_size > 0 ? f.ctx_size : std::min<int64_t>(config.context_length, 4096);
}

EngineConfig engine_config(const EngineFlags& engine, const SchedulerFlags& sched, uint64_t kv_bytes,
                           int64_t ctx_size) {
  EngineConfig cfg;
  cfg.threads = resolve_threads(engine);
  cfg.backend = backend_options(engine);
  cfg.kv_cache_memory = kv_bytes;
  cfg.ctx_size = ctx_size;
  cfg.kv_dtype = kv_dtype(engine);
  cfg.max_num_seqs = sched.max_num_seqs;
  cfg.max_num_batched_tokens = sched.max_num_batched_tokens;
  cfg.enable_prefix_cache = !sched.no_prefix_cache;
  cfg.spec = sched.spec;
  return cfg;
}

void add_spec_flags(CLI::App& app, SpeculativeOptions& s) {
  app.add_option("--spec", s.method, "Speculative decoding: ngram (prompt lookup; output unchanged)")
      ->check(CLI::IsMember({"ngram"}));
  app.add_option("--spec-k", s.k, "Tokens proposed per sequence and step at most")->check(CLI::Range(1, 32));
  app.add_option("--spec-ngram-min", s.ngram_min, "Shortest suffix the n-gram lookup matches")
      ->check(CLI::Range(1, 16));
  app.add_option("--spec-ngram-max", s.ngram_max, "Longest suffix the n-gram lookup matches")->check(CLI::Range(1, 16));
  app.add_option("--spec-disable-batch-size", s.disable_batch_size,
                 "No speculation in a step with more running sequences than this")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag(
      "--no-spec-adaptive", [&s](int64_t) { s.adaptive = false; },
      "Keep --spec-k fixed instead of adapting it per sequence to its acceptance");
}

int check_spec_flags(const SpeculativeOptions& s) {
  if (Status st = s.validate(); !st.ok()) {
    fmt::print(stderr, "tessera: error: {} (see --help)\n", st.message());
    return kExitUsage;
  }
  return 0;
}

void add_scheduler_flags(CLI::App& app, SchedulerFlags& f) {
  app.add_option("--max-num-seqs", f.max_num_seqs, "Sequences running at once at most")->check(CLI::Range(1, 4096));
  app.add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                 "Tokens per engine step at most (prefill chunks)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--no-prefix-cache", f.no_prefix_cache, "Do not reuse the KV blocks of shared prompt prefixes");
}

int resolve_threads(const EngineFlags& f) {
  return f.threads > 0 ? f.threads : cpu_features().physical_cores;
}

Result<uint64_t> kv_memory_bytes(const EngineFlags& f) {
  if (f.kv_cache_memory.empty()) return uint64_t{0};
  auto r = parse_byte_size(f.kv_cache_memory);
  if (!r.ok()) return invalid_argument("--kv-cache-memory: " + r.status().message());
  if (*r == 0) return invalid_argument("--kv-cache-memory must be positive");
  return *r;
}

int fail(const Status& status) {
  fmt::print(stderr, "tessera: error: {}\n", status.message());
  return 1;
}

}  // namespace tessera::cli
