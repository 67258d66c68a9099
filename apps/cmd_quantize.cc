// `tessera quantize IN OUT TYPE`: requantizes a GGUF model (or a Hugging Face
// directory) to a block format or a K-quant mix (model/quantize_model.h),
// with a progress bar on stderr and one line per fallback.
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "cli_common.h"
#include "progress_bar.h"
#include "tessera/byte_size.h"
#include "tessera/system.h"
#include "tessera/tools.h"

namespace tessera::cli {

namespace {

struct QuantizeOptions {
  std::string input;
  std::string output;
  std::string type;
  int threads = 0;
};

// The f32 temporary of a Hugging Face input (4 bytes per parameter): removed
// when Ctrl-C or a kill ends the conversion, before the signal's default
// action ends the process. A fixed buffer: the handler may not allocate.
char g_temporary[4096];

extern "C" void remove_temporary_and_reraise(int sig) {
  if (g_temporary[0] != '\0') ::unlink(g_temporary);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void remove_temporary_on_signals(const std::string& path) {
  if (path.size() >= sizeof g_temporary) return;
  std::memcpy(g_temporary, path.c_str(), path.size() + 1);
  struct sigaction sa {};
  sa.sa_handler = remove_temporary_and_reraise;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

int quantize_main(const QuantizeOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.input, ec) &&
      !std::filesystem::exists(tools::quantize_temporary_path(o.output), ec)) {
    remove_temporary_on_signals(tools::quantize_temporary_path(o.output));
  }
  ProgressBar bar("quantize", "tensors");
  auto summary =
      tools::quantize(o.input, o.output, o.type, o.threads > 0 ? o.threads : physical_cores(),
                      [&bar](int done, int total, const std::string& name) { bar.update(done, total, name); });
  if (!summary.ok()) return fail(summary.status());
  for (const std::string& note : summary->notes) fmt::print(stderr, "note: {}\n", note);
  fmt::print(stderr, "wrote {} ({}, {} tensors, {} matrices quantized): {} -> {}\n", o.output, o.type,
             summary->n_tensors, summary->n_quantized, format_byte_size(summary->bytes_in),
             format_byte_size(summary->bytes_out));
  return 0;
}

}  // namespace

Runner register_quantize(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* sub =
      app.add_subcommand("quantize", "Requantize a GGUF model (or Hugging Face directory) to a block format");
  sub->add_option("input", o->input, "Input GGUF file (f32/f16/bf16/any readable type) or Hugging Face directory")
      ->required();
  sub->add_option("output", o->output, "Output .gguf path")->required();
  sub->add_option(
         "type", o->type,
         "Target: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k..q6_k, f16, bf16, f32, or a mix: q3_k_s/m/l, q4_k_s/m, q5_k_s/m")
      ->required()
      ->transform(CLI::IsMember(tools::quantize_type_names(), CLI::ignore_case));
  sub->add_option("-t,--threads", o->threads, "Worker threads (default: physical cores)")->check(CLI::Range(1, 1024));
  return [o] { return quantize_main(*o); };
}

}  // namespace tessera::cli
