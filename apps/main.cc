// tessera: run and serve large language models. Subcommands live in cmd_*.cc.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cli_common.h"
#include "version.h"

int main(int argc, char** argv) {
  CLI::App app{"tessera: run and serve large language models (GGUF or Hugging Face) on the CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", tessera::cli::version_text,
                       "Print the version, git commit, build type and CPU kernels, then exit");
  const std::map<std::string, tessera::cli::Runner> runners = {
      {"run", tessera::cli::register_run(app)},
      {"inspect", tessera::cli::register_inspect(app)},
      {"bench", tessera::cli::register_bench(app)},
      {"random-model", tessera::cli::register_random_model(app)},
      {"tokenize", tessera::cli::register_tokenize(app)},
      {"detokenize", tessera::cli::register_detokenize(app)},
      {"convert", tessera::cli::register_convert(app)},
      {"quantize", tessera::cli::register_quantize(app)},
      {"perplexity", tessera::cli::register_perplexity(app)},
      {"chat", tessera::cli::register_chat(app)},
      {"bench-serving", tessera::cli::register_bench_serving(app)},
      {"serve", tessera::cli::register_serve(app)},
      {"bench-serve", tessera::cli::register_bench_serve(app)},
  };
  // `tessera bench serve ...` is `tessera bench-serve ...` (the spelling of issue #6). `bench` takes no
  // positional argument, so a second word `serve` can mean nothing else.
  std::vector<char*> args(argv, argv + argc);
  std::string alias = "bench-serve";
  if (args.size() >= 3 && std::string(args[1]) == "bench" && std::string(args[2]) == "serve") {
    args.erase(args.begin() + 2);
    args[1] = alias.data();
  }
  // A first word that is no command: CLI11 would say only "A subcommand is required".
  if (args.size() >= 2 && args[1][0] != '-' && runners.count(args[1]) == 0) {
    std::string names;
    for (const auto& [name, runner] : runners) names += (names.empty() ? "" : ", ") + name;
    fmt::print(stderr, "tessera: error: unknown command '{}' (commands: {}; see --help)\n", args[1], names);
    return tessera::cli::kExitUsage;
  }
  // The kernel switches (README "Build"); a misspelt value would otherwise
  // run the default kernels, or another schedule, unnoticed. Empty = unset.
  // Checked for --version too, which reports the path TESSERA_ISA picks.
  struct EnvSwitch {
    const char* name;
    std::vector<std::string> values;
    const char* expected;
  };
  const EnvSwitch switches[] = {
      {"TESSERA_ISA", {"scalar", "avx2", "avxvnni", "avx512"}, "scalar, avx2, avxvnni or avx512"},
      {"TESSERA_TILED_GEMM", {"0", "1"}, "0 or 1"},
      {"TESSERA_DECODE_STREAMS", {"1", "2", "3", "4"}, "1, 2, 3 or 4"},
  };
  auto environment_ok = [&] {
    for (const EnvSwitch& sw : switches) {
      const char* v = std::getenv(sw.name);
      if (v == nullptr || *v == '\0') continue;
      if (std::find(sw.values.begin(), sw.values.end(), v) == sw.values.end()) {
        fmt::print(stderr, "tessera: error: {}={}: expected {}\n", sw.name, v, sw.expected);
        return false;
      }
    }
    return true;
  };
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    if (!environment_ok()) return tessera::cli::kExitUsage;
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "tessera: error: {} (see --help)\n", e.what());
    return tessera::cli::kExitUsage;
  }
  if (!environment_ok()) return tessera::cli::kExitUsage;
  return runners.at(app.get_subcommands().front()->get_name())();
}
