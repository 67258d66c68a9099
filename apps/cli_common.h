// Pieces shared by the tessera subcommands: engine flags, error exits.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "tessera/engine.h"
#include "tessera/status.h"

namespace tessera::cli {

// Headings of `--help` (CLI11 option groups), as `vllm serve --help` and
// `llama-server --help` group theirs. The shared add_*_flags below put their
// flags under these; a command adds its own flags to one of them or its own.
inline constexpr const char* kGroupModel = "Model";
inline constexpr const char* kGroupEngine = "Engine / KV cache";
inline constexpr const char* kGroupServer = "Server";
inline constexpr const char* kGroupSampling = "Sampling defaults";
inline constexpr const char* kGroupSpeculative = "Speculative decoding";

// Flags every command that runs a model takes.
// Continuous-batching flags (run, serve).
struct SchedulerFlags {
  int32_t max_num_seqs = 64;
  int32_t max_num_batched_tokens = 512;
  bool no_prefix_cache = false;
  SpeculativeOptions spec;  // add_spec_flags (run, serve, chat, bench)
};
void add_scheduler_flags(CLI::App& app, SchedulerFlags& flags);
// Speculative decoding flags: --spec ngram, --spec-k, --spec-ngram-min/-max,
// --spec-disable-batch-size, --no-spec-adaptive.
void add_spec_flags(CLI::App& app, SpeculativeOptions& spec);
// After parsing: 0, or prints the one-line usage error of an inconsistent
// combination (e.g. --spec-ngram-min above --spec-ngram-max) and returns kExitUsage.
int check_spec_flags(const SpeculativeOptions& spec);

struct EngineFlags {
  std::string model;
  int threads = 0;                      // 0: physical cores
  int64_t ctx_size = 0;                 // 0: min(trained context, 4096)
  std::string kv_cache_memory;          // e.g. "64MiB"; overrides ctx_size
  std::string kv_cache_dtype = "auto";  // auto, f16, bf16, f32, int8 or fp8
  std::string f16_matmul = "auto";      // --f16-matmul: auto (bf16 / int16 per CPU) or f16 (exact weights)
  std::string quantize;                 // --quantize: load-time quantization type; empty: none
  std::string device = "cpu";           // --device: a backend_names() entry
  bool check_tensors = false;           // --check-tensors: every weight value checked for Inf/NaN at load
  ParallelOptions parallel;             // --tensor-parallel-size, --pipeline-parallel-size, --pp-layer-split
};

void add_engine_flags(CLI::App& app, EngineFlags& flags);
// The backend the flags choose (--device, threads) with the kernel switches'
// environment aliases applied (TESSERA_ISA, TESSERA_TILED_GEMM,
// TESSERA_DECODE_STREAMS; README "Build"). The library reads no environment.
BackendOptions backend_options(const EngineFlags& flags);
// The CPU path to run: TESSERA_ISA when set and lower than the best, else best_isa().
Isa isa_from_environment();
// Threads to use: the flag, else the number of physical cores.
int resolve_threads(const EngineFlags& flags);
// KV budget in bytes from --kv-cache-memory (0 when unset); kInvalidArgument on a bad size.
Result<uint64_t> kv_memory_bytes(const EngineFlags& flags);

// The engine the flags describe (tessera/engine.h): the model, backend,
// KV cache (--kv-cache-memory, else ctx_size tokens: --ctx-size when
// ctx_size is 0, and when that is unset too min(trained context, 4096)) and
// scheduler. Errors: a bad --kv-cache-memory.
Result<EngineOptions> engine_options(const EngineFlags& engine, const SchedulerFlags& sched, int64_t ctx_size = 0);

// Creates the engine `options` describe (Engine::create), with a
// ProgressTimer on stderr while a model of at least kLargeModelBytes loads
// (progress_bar.h). For a parallel run (options.parallel.world_size() > 1)
// it first starts MPI; on ranks other than 0 it then serves rank 0's engines
// and exits the process when rank 0 does (never returning). Errors: a
// parallel size outside mpirun (or with another number of ranks), a build
// without MPI, Engine::create's.
Result<std::unique_ptr<Engine>> load_engine(const EngineOptions& options);

// Loads the model (load_engine) and creates the engine engine_options() describes.
Result<std::unique_ptr<Engine>> create_engine(const EngineFlags& engine, const SchedulerFlags& sched,
                                              int64_t ctx_size = 0);

// 0, or prints the one-line usage error of --pp-layer-split entries that do not
// match --pipeline-parallel-size and returns kExitUsage (load_engine, inspect);
// `print` false: the code only (MPI ranks other than 0).
int check_parallel_flags(const ParallelOptions& parallel, bool print = true);

// Checks a --plot FILE before a run: 0, or prints the one-line error and
// returns the exit code (kExitUsage for a name not ending in .svg/.html, 1
// for a file that cannot be written).
int check_plot_flag(const std::string& plot);

// Prints "tessera: error: <message>" and returns exit code 1.
int fail(const Status& status);

// Prints one warning line on stderr when the engine's context is longer than
// the model's trained context (llama.cpp warns likewise): positions past it
// are outside what the model learned, and output there may degrade.
void warn_past_trained_context(const ModelInfo& info);

// Exit codes: 0 ok, 1 runtime error (bad model, prompt too long), 2 usage error.
inline constexpr int kExitUsage = 2;

// Each adds its subcommand to `app` and returns the function that runs it
// once the command line is parsed (returning the exit code).
using Runner = std::function<int()>;
Runner register_run(CLI::App& app);
Runner register_inspect(CLI::App& app);
Runner register_bench(CLI::App& app);
Runner register_random_model(CLI::App& app);
Runner register_tokenize(CLI::App& app);
Runner register_detokenize(CLI::App& app);
Runner register_convert(CLI::App& app);
Runner register_quantize(CLI::App& app);
Runner register_perplexity(CLI::App& app);
Runner register_chat(CLI::App& app);
Runner register_bench_serving(CLI::App& app);
Runner register_serve(CLI::App& app);
Runner register_bench_serve(CLI::App& app);

}  // namespace tessera::cli
