// `tessera convert`: a Hugging Face model directory -> one GGUF v3 file.
#include <fmt/core.h>

#include <memory>

#include "cli_common.h"
#include "progress_bar.h"
#include "tessera/byte_size.h"
#include "tessera/tools.h"

namespace tessera::cli {

namespace {
struct ConvertFlags {
  std::string input;
  std::string output;
  std::string dtype = "f16";
};
}  // namespace

Runner register_convert(CLI::App& app) {
  auto f = std::make_shared<ConvertFlags>();
  CLI::App* sub = app.add_subcommand(
      "convert", "Convert a Hugging Face directory (config.json, *.safetensors, tokenizer.json) to GGUF");
  sub->add_option("hf_dir", f->input, "Hugging Face model directory")->required()->check(CLI::ExistingDirectory);
  sub->add_option("output", f->output, "Output .gguf path")->required();
  sub->add_option("--dtype", f->dtype,
                  "Type of the weight matrices (norms stay f32; q8_0 falls back to f16 "
                  "for rows that are not whole 32-element blocks)")
      ->check(CLI::IsMember(tools::convert_dtype_names()));
  return [f] {
    tools::ConvertOptions options;
    options.dtype = f->dtype;
    // The converter reports no per-tensor progress, so the elapsed time is shown instead.
    ProgressTimer progress("convert", fmt::format("{} -> {} ({})", f->input, f->output, f->dtype));
    auto summary = tools::convert_hf(f->input, f->output, options);
    if (!summary.ok()) return fail(summary.status());
    progress.finish();
    for (const std::string& note : summary->notes) fmt::print(stderr, "note: {}\n", note);
    fmt::print(stderr, "wrote {}: {} tensors, {:.2f} M parameters, {} of tensor data ({}), {}\n", f->output,
               summary->n_tensors, static_cast<double>(summary->n_parameters) / 1e6,
               format_byte_size(summary->tensor_bytes), f->dtype,
               summary->wrote_tokenizer ? "with tokenizer" : "no tokenizer.json: weights only");
    return 0;
  };
}

}  // namespace tessera::cli
