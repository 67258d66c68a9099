#include "cli_common.h"

#include <fmt/core.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <vector>

#include "progress_bar.h"
#include "svg_plot.h"
#include "tessera/byte_size.h"
#include "tessera/parallel.h"
#include "tessera/system.h"

namespace tessera::cli {

void add_engine_flags(CLI::App& app, EngineFlags& f) {
  app.add_option("-m,--model", f.model, "Model: a GGUF file or a Hugging Face directory")
      ->required()
      ->group(kGroupModel);
  app.add_option("-t,--threads", f.threads, "Worker threads (default: physical cores)")
      ->check(CLI::Range(1, 1024))
      ->group(kGroupEngine);
  app.add_option("-c,--ctx-size", f.ctx_size,
                 "Context size in tokens; sizes the KV cache (default: min(trained, 4096))")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 30))  // a prompt token and one generated
      ->group(kGroupEngine);
  app.add_option("--kv-cache-memory", f.kv_cache_memory,
                 "KV cache memory budget, e.g. 64MiB or 2GiB (overrides --ctx-size)")
      // A size that does not parse is a usage error (exit 2), as for the
      // other flags; one too small for the model is found at load (exit 1).
      ->check(CLI::Validator(
          [](std::string& text) {
            auto r = parse_byte_size(text);
            if (!r.ok()) return r.status().message();
            return *r == 0 ? std::string("must be positive") : std::string();
          },
          "SIZE"))
      ->group(kGroupEngine);
  app.add_option("--kv-cache-dtype", f.kv_cache_dtype,
                 "KV cache element type (auto: the weights' f32/f16/bf16 type, f16 for quantized models)")
      ->check(CLI::IsMember({"auto", "f16", "bf16", "f32", "int8", "fp8"}))
      ->capture_default_str()
      ->group(kGroupEngine);
  app.add_option("--f16-matmul", f.f16_matmul,
                 "F16 and BF16 weight matrices: auto = F16 as bf16 on the avx512 path of CPUs with AVX512-BF16 (2x "
                 "the f32 FMA rate, weights rounded to bf16 at load), F16 and BF16 as int16 on the avx2 paths and on "
                 "avx512 without AVX512-BF16 (weights quantized to int16 per 64 columns at load, exact integer sums), "
                 "exact on the scalar path; f16 = the f16 and bf16 weights exactly (f32 FMAs; BF16 on AVX512-BF16 "
                 "keeps vdpbf16ps, activations rounded to bf16)")
      ->check(CLI::IsMember({"auto", "f16"}))
      ->capture_default_str()
      ->group(kGroupEngine);
  app.add_option("--quantize", f.quantize,
                 "Requantize the weight matrices at load time (all but the token embedding) to a block type or "
                 "one of llama.cpp's mixes (q4_k_m: q4_k, with q6_k for the output and some attn_v / ffn_down; "
                 "see `tessera quantize`); a matrix whose rows do not fit its type's block, 32 elements or 256 "
                 "for the _k types, keeps its type, with a note")
      ->transform(CLI::IsMember(load_quantize_type_names(), CLI::ignore_case))
      ->group(kGroupModel);
  app.add_flag("--check-tensors", f.check_tensors,
               "Check every weight value for Inf/NaN at load (always checked: quantized scales, norms)")
      ->group(kGroupModel);
  std::string devices;
  for (const std::string& n : device_names()) devices += (devices.empty() ? "" : ", ") + n;
  app.add_option("--device", f.device, "Backend that runs the model (this build has: " + devices + ")")
      ->check(CLI::IsMember(device_names()))
      ->group(kGroupEngine);
  app.add_option("--tensor-parallel-size", f.parallel.tensor_parallel_size,
                 "Ranks splitting every weight matrix (run under mpirun -np T*P)")
      ->check(CLI::Range(1, 1024))
      ->group(kGroupEngine);
  app.add_option("--pipeline-parallel-size", f.parallel.pipeline_parallel_size,
                 "Pipeline stages of consecutive layers (run under mpirun -np T*P)")
      ->check(CLI::Range(1, 1024))
      ->group(kGroupEngine);
  app.add_option("--pp-layer-split", f.parallel.pp_layer_split, "Layers per pipeline stage, e.g. 12,10 (default: even)")
      ->delimiter(',')
      ->group(kGroupEngine);
}

Isa isa_from_environment() {
  // A path this CPU lacks leaves the best one (as the variable always did):
  // avxvnni on an AVX-512 CPU without AVX-VNNI, avx512 on an AVX2 one.
  if (const char* v = std::getenv("TESSERA_ISA"); v != nullptr && *v != '\0') {
    if (auto isa = isa_from_name(v); isa) {
      for (Isa s : supported_isas()) {
        if (s == *isa) return s;
      }
    }
  }
  return best_isa();
}

BackendOptions backend_options(const EngineFlags& f) {
  BackendOptions o;
  o.device = f.device;
  o.threads = resolve_threads(f);
  o.f16_matmul = f.f16_matmul == "f16" ? F16Matmul::kF16 : F16Matmul::kAuto;
  // The environment aliases of the kernel switches (README "Build"); main()
  // has already refused malformed values.
  if (const Isa isa = isa_from_environment(); isa != best_isa()) o.isa = isa;
  if (const char* v = std::getenv("TESSERA_TILED_GEMM"); v != nullptr && std::string(v) == "0") o.tile_kernels = false;
  if (const char* v = std::getenv("TESSERA_DECODE_STREAMS"); v != nullptr && v[0] >= '1' && v[0] <= '4' && v[1] == 0) {
    o.decode_streams = v[0] - '0';
  }
  return o;
}

Result<EngineOptions> engine_options(const EngineFlags& engine, const SchedulerFlags& sched, int64_t ctx_size) {
  EngineOptions o;
  o.model = engine.model;
  o.quantize = engine.quantize;
  o.check_tensors = engine.check_tensors;
  o.backend = backend_options(engine);
  o.ctx_size = ctx_size > 0 ? ctx_size : engine.ctx_size;
  TESSERA_ASSIGN_OR_RETURN(o.kv_cache_memory, kv_memory_bytes(engine));
  o.kv_cache_dtype = engine.kv_cache_dtype;
  o.max_num_seqs = sched.max_num_seqs;
  o.max_num_batched_tokens = sched.max_num_batched_tokens;
  o.enable_prefix_cache = !sched.no_prefix_cache;
  o.spec = sched.spec;
  o.parallel = engine.parallel;
  return o;
}

namespace {

// A parallel run's setup: a usage error (bad layout flags, ranks with
// different flags, another number of ranks than the flags need) is one line
// from rank 0 and exit 2 on every rank.
Status parallel_setup(const EngineOptions& o) {
  const ParallelOptions& p = o.parallel;
  const int world = p.world_size();
  if (world > 1 && launched_ranks() != world) {
    return invalid_argument(fmt::format(
        "--tensor-parallel-size {} x --pipeline-parallel-size {} runs on {} ranks: start it with mpirun -np {} "
        "tessera ... ({} started)",
        p.tensor_parallel_size, p.pipeline_parallel_size, world, world, launched_ranks()));
  }
  if (launched_ranks() > 1 && parallel_available()) return join_parallel_launch(p);
  if (world > 1) return init_parallel(world);
  return {};
}

}  // namespace

Result<std::unique_ptr<Engine>> load_engine(const EngineOptions& o) {
  const ParallelOptions& p = o.parallel;
  // Every rank sees the same flags; rank 0 prints the error.
  if (int rc = check_parallel_flags(p, launched_rank() == 0); rc != 0) std::exit(rc);
  if (p.world_size() > 1 && o.spec.effective_method() == "draft") {
    if (launched_rank() == 0)
      fmt::print(stderr,
                 "tessera: error: --draft-model cannot be combined with --tensor-parallel-size / "
                 "--pipeline-parallel-size (the draft model runs on one rank only) (see --help)\n");
    std::exit(kExitUsage);
  }
  if (Status st = parallel_setup(o); !st.ok()) {
    if (launched_rank() == 0) fmt::print(stderr, "tessera: error: {} (see --help)\n", st.message());
    std::exit(st.code() == StatusCode::kInvalidArgument ? kExitUsage : 1);
  }
  // After the ranks compared their flags: a refused launch gets only its error.
  if (p.world_size() == 1 && launched_ranks() > 1 && launched_rank() == 0) {
    fmt::print(stderr,
               "tessera: warning: started as {} MPI ranks without --tensor-parallel-size / --pipeline-parallel-size: "
               "every rank runs the whole model on its own\n",
               launched_ranks());
  }
  if (p.world_size() > 1) {
    if (const int rank = parallel_rank(); rank != 0) {
      // A worker: rank 0 reports load and shard errors; this rank's own
      // failure during a step is its one line, and it ends every rank (the
      // others would wait for it). mpirun forwards SIGTERM/SIGINT to every
      // rank: rank 0 drains and tells the workers to exit.
      std::signal(SIGTERM, SIG_IGN);
      std::signal(SIGINT, SIG_IGN);
      const Status st = run_parallel_worker(o.model);
      if (st.ok()) std::exit(0);
      fmt::print(stderr, "tessera: error: rank {}: {}\n", rank, st.message());
      abort_parallel_run(1);
    }
  }
  std::optional<ProgressTimer> loading;
  if (const uint64_t bytes = model_file_bytes(o.model); bytes >= kLargeModelBytes) {
    loading.emplace("loading model", fmt::format("{} ({})", o.model, format_byte_size(bytes)));
  }
  auto engine = Engine::create(o);
  if (loading && engine.ok()) loading->finish();
  if (engine.ok() && !o.quantize.empty()) {
    // Load-time quantization skips what does not fit: say so rather than
    // run the model as stored without a word.
    const ModelInfo& m = (*engine)->model_info();
    if (m.quantized_matrices < m.quantize_candidates) {
      fmt::print(stderr,
                 "tessera: note: --quantize {}: {} of {} weight matrices requantized; the others keep their type "
                 "(row length not a multiple of the type's block of {} elements, or already that type)\n",
                 o.quantize, m.quantized_matrices, m.quantize_candidates,
                 o.quantize.find("_k") != std::string::npos ? 256 : 32);
    }
  }
  return engine;
}

Result<std::unique_ptr<Engine>> create_engine(const EngineFlags& engine, const SchedulerFlags& sched,
                                              int64_t ctx_size) {
  TESSERA_ASSIGN_OR_RETURN(EngineOptions o, engine_options(engine, sched, ctx_size));
  return load_engine(o);
}

void add_spec_flags(CLI::App& app, SpeculativeOptions& s) {
  CLI::Option* spec =
      app.add_option("--spec", s.method,
                     "Speculative decoding: ngram (prompt lookup) or draft (a draft model, --draft-model); output "
                     "distribution unchanged")
          ->check(CLI::IsMember({"ngram", "draft"}))
          ->group(kGroupSpeculative);
  CLI::Option* draft =
      app.add_option(
             "--draft-model", s.draft_model,
             "Draft model (GGUF file or HF directory, the target's vocabulary) proposing tokens; implies --spec "
             "draft")
          ->group(kGroupSpeculative);
  app.add_option("--draft-kv-tokens", s.draft_kv_tokens,
                 "Draft KV cache capacity in tokens (default: the target cache's plus --spec-k and one block per "
                 "sequence)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->group(kGroupSpeculative);
  app.add_option("--draft-threads", s.draft_threads, "Draft model threads (default: the target's -t)")
      ->check(CLI::Range(1, 1024))
      ->group(kGroupSpeculative);
  // The tuning flags mean nothing without a proposer: a usage error (exit 2)
  // rather than silently ignored.
  std::vector<CLI::Option*> tuning;
  tuning.push_back(app.add_option("--spec-k", s.k, "Tokens proposed per sequence and step at most")
                       ->check(CLI::Range(1, 32))
                       ->group(kGroupSpeculative));
  tuning.push_back(app.add_option("--spec-ngram-min", s.ngram_min, "Shortest suffix the n-gram lookup matches")
                       ->check(CLI::Range(1, 16))
                       ->group(kGroupSpeculative));
  tuning.push_back(app.add_option("--spec-ngram-max", s.ngram_max, "Longest suffix the n-gram lookup matches")
                       ->check(CLI::Range(1, 16))
                       ->group(kGroupSpeculative));
  tuning.push_back(app.add_option("--spec-disable-batch-size", s.disable_batch_size,
                                  "No speculation in a step with more running sequences than this")
                       ->check(CLI::Range(1, 1 << 20))
                       ->group(kGroupSpeculative));
  tuning.push_back(app.add_flag(
                          "--no-spec-adaptive", [&s](int64_t) { s.adaptive = false; },
                          "Keep --spec-k fixed instead of adapting it per sequence to its acceptance")
                       ->group(kGroupSpeculative));
  tuning.push_back(
      app.add_flag(
             "--no-spec-cost-aware", [&s](int64_t) { s.cost_aware = false; },
             "Speculate whenever there are proposals, instead of only when the measured step times and acceptance say "
             "it pays")
          ->group(kGroupSpeculative));
  app.parse_complete_callback([spec, draft, tuning] {
    if (spec->count() > 0 || draft->count() > 0) return;
    for (const CLI::Option* o : tuning) {
      if (o->count() > 0) throw CLI::ValidationError(o->get_name(), "needs --spec or --draft-model");
    }
  });
}

int check_spec_flags(const SpeculativeOptions& s) {
  if (Status st = s.validate(); !st.ok()) {
    fmt::print(stderr, "tessera: error: {} (see --help)\n", st.message());
    return kExitUsage;
  }
  return 0;
}

void add_scheduler_flags(CLI::App& app, SchedulerFlags& f) {
  app.add_option("--max-num-seqs", f.max_num_seqs, "Sequences running at once at most")
      ->check(CLI::Range(1, 4096))
      ->group(kGroupEngine);
  app.add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                 "Tokens per engine step at most (prefill chunks)")
      ->check(CLI::Range(1, 1 << 20))
      ->group(kGroupEngine);
  app.add_flag("--no-prefix-cache", f.no_prefix_cache, "Do not reuse the KV blocks of shared prompt prefixes")
      ->group(kGroupEngine);
}

int resolve_threads(const EngineFlags& f) {
  return f.threads > 0 ? f.threads : physical_cores();
}

Result<uint64_t> kv_memory_bytes(const EngineFlags& f) {
  if (f.kv_cache_memory.empty()) return uint64_t{0};
  auto r = parse_byte_size(f.kv_cache_memory);
  if (!r.ok()) return invalid_argument("--kv-cache-memory: " + r.status().message());
  if (*r == 0) return invalid_argument("--kv-cache-memory must be positive");
  return *r;
}

int check_parallel_flags(const ParallelOptions& p, bool print) {
  for (const int layers : p.pp_layer_split) {
    if (layers >= 1) continue;
    if (print)
      fmt::print(stderr, "tessera: error: --pp-layer-split: every stage needs at least 1 layer (see --help)\n");
    return kExitUsage;
  }
  if (p.pp_layer_split.empty() || static_cast<int>(p.pp_layer_split.size()) == p.pipeline_parallel_size) return 0;
  if (print)
    fmt::print(
        stderr,
        "tessera: error: --pp-layer-split gives {} stages' layers; --pipeline-parallel-size is {} (see --help)\n",
        p.pp_layer_split.size(), p.pipeline_parallel_size);
  return kExitUsage;
}

int check_plot_flag(const std::string& plot) {
  if (plot.empty()) return 0;
  if (!plot_path_ok(plot)) {
    fmt::print(stderr, "tessera: error: --plot {}: the file must end in .svg or .html (see --help)\n", plot);
    return kExitUsage;
  }
  // Fail before the run, not after it: the plot file must be writable.
  std::ofstream probe(plot, std::ios::app);
  if (!probe) return fail(invalid_argument("--plot " + plot + ": cannot write the plot"));
  return 0;
}

int fail(const Status& status) {
  fmt::print(stderr, "tessera: error: {}\n", status.message());
  return 1;
}

void warn_past_trained_context(const ModelInfo& info) {
  if (info.trained_context <= 0 || info.context <= info.trained_context) return;
  fmt::print(stderr,
             "tessera: warning: the context ({} tokens) is longer than the model's trained context ({}); output past "
             "position {} may degrade\n",
             info.context, info.trained_context, info.trained_context);
}

}  // namespace tessera::cli
