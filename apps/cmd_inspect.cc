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
  CLI::App* sub = app.add_subcommand("inspect", "Print a model's metadata, tensors and memory arithmetic");
  sub->add_option("model", *path, "Model file (GGUF) or Hugging Face directory")->required();
  return [path] {
    auto report = tools::inspect(*path);
    if (!report.ok()) return fail(report.status());
    fmt::print("{}", *report);
    return 0;
  };
}

}  // namespace tessera::cli
