// `tessera random-model`: write a random-weight GGUF in the shape of a real model.
#include <fmt/core.h>

#include <memory>

#include "cli_common.h"
#include "tessera/system.h"
#include "tessera/tools.h"

namespace tessera::cli {

namespace {
struct RandomModelOptions {
  std::string preset = "tinyllama-1.1b";
  std::string dtype = "f16";
  std::string output;
  uint64_t seed = 1;
  int threads = 0;
  int greedy_cycle = 0;
};
}  // namespace

Runner register_random_model(CLI::App& app) {
  auto o = std::make_shared<RandomModelOptions>();
  CLI::App* sub = app.add_subcommand("random-model", "Write a GGUF model with random weights in a real model's shape");
  sub->add_option("--shape", o->preset, "Shape preset")
      ->check(CLI::IsMember(tools::random_model_shape_names()))
      ->capture_default_str();
  sub->add_option("--dtype", o->dtype, "Weight type of the matrices, or a mix preset (q3_k_m, q4_k_m, ...)")
      ->transform(CLI::IsMember(tools::quantize_type_names(), CLI::ignore_case))
      ->capture_default_str();
  sub->add_option("-o,--output", o->output, "Output .gguf path")->required();
  sub->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  sub->add_option("--greedy-cycle", o->greedy_cycle,
                  "Synthetic weights under which greedy decoding cycles with this period (a stand-in for a "
                  "repetitive model, for `bench --spec`); 0: plain random weights")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("-t,--threads", o->threads, "Worker threads (default: physical cores)")->check(CLI::Range(1, 1024));
  return [o] {
    const auto r = tools::write_random_model(
        o->preset, o->dtype, o->seed, o->threads > 0 ? o->threads : physical_cores(), o->output, o->greedy_cycle);
    if (!r.ok()) return fail(r.status());
    for (const std::string& n : r->notes) fmt::print(stderr, "note: {}\n", n);
    fmt::print(stderr, "wrote {} ({} {}, random weights, seed {}{})\n", o->output, o->preset, o->dtype, o->seed,
               o->greedy_cycle > 0 ? fmt::format(", greedy cycle {}", o->greedy_cycle) : std::string());
    return 0;
  };
}

}  // namespace tessera::cli
