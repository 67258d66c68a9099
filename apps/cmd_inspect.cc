// `tessera inspect`: metadata, tensor table and memory arithmetic of a model
// file (GGUF) or of a Hugging Face directory (config.json + safetensors);
// the report is tools::inspect's (tessera/tools.h).
#include <fmt/core.h>

#include <memory>
#include <string>

#include "cli_common.h"
#include "tessera/tools.h"

namespace tessera::cli {

Runner register_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto parallel = std::make_shared<ParallelOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Print a model's metadata, tensors and memory arithmetic");
  sub->add_option("model", *path, "Model file (GGUF) or Hugging Face directory")->required();
  sub->add_option("--tensor-parallel-size", parallel->tensor_parallel_size,
                  "Also print what each of T tensor-parallel ranks would hold")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--pipeline-parallel-size", parallel->pipeline_parallel_size,
                  "Also print what each of P pipeline stages would hold")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--pp-layer-split", parallel->pp_layer_split, "Layers per pipeline stage, e.g. 12,10")
      ->delimiter(',');
  return [path, parallel] {
    if (int rc = check_parallel_flags(*parallel); rc != 0) return rc;
    auto report = tools::inspect(*path, *parallel);
    if (!report.ok()) return fail(report.status());
    fmt::print("{}", *report);
    return 0;
  };
}

}  // namespace tessera::cli
