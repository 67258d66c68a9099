// tools::convert_hf, tools::quantize and tools::write_random_model
// (tessera/tools.h) over the model library's converters and writers.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/convert_hf.h"
#include "model/quantize_model.h"
#include "model/random_model.h"
#include "tessera/tools.h"

namespace tessera::tools {

std::vector<std::string> convert_dtype_names() {
  return {"f32", "f16", "bf16", "q8_0"};
}

Result<ConvertSummary> convert_hf(const std::string& hf_dir, const std::string& out_path,
                                  const ConvertOptions& options) {
  const std::vector<std::string> names = convert_dtype_names();
  if (std::find(names.begin(), names.end(), options.dtype) == names.end()) {
    return invalid_argument("convert: dtype '" + options.dtype + "': expected f32, f16, bf16 or q8_0");
  }
  tessera::ConvertOptions internal;
  internal.dtype = *dtype_from_name(options.dtype);
  return convert_hf_to_gguf(hf_dir, out_path, internal);
}

std::vector<std::string> quantize_type_names() {
  return quant_scheme_names();
}

namespace {

// The output would overwrite the input while it is read (and the input is
// lost): the same path, a hard link or a symlink to it; or its directory does
// not exist.
Status check_output_is_not_input(const std::string& in_path, const std::string& out_path) {
  std::error_code ec;
  if (std::filesystem::exists(out_path, ec) && std::filesystem::equivalent(in_path, out_path, ec) && !ec) {
    return invalid_argument("the output " + out_path + " is the input file: write to another path");
  }
  // Fail before the conversion, not after it.
  const std::filesystem::path dir = std::filesystem::path(out_path).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    return not_found(out_path + ": cannot create: no directory " + dir.string());
  }
  return {};
}

}  // namespace

Result<QuantizeSummary> quantize(const std::string& in_path, const std::string& out_path, const std::string& type,
                                 int threads, const Progress& progress) {
  TESSERA_RETURN_IF_ERROR(check_output_is_not_input(in_path, out_path));
  const std::optional<QuantScheme> scheme = quant_scheme_from_name(type);
  if (!scheme) return invalid_argument("unknown quantization type '" + type + "'");
  ThreadPool pool(std::max(1, threads));
  return quantize_model(in_path, out_path, *scheme, pool, progress);
}

std::vector<std::string> random_model_shape_names() {
  return random_model_preset_names();
}

Result<RandomModelSummary> write_random_model(const std::string& shape, const std::string& dtype, uint64_t seed,
                                              int threads, const std::string& out_path, int greedy_cycle) {
  std::optional<RandomModelShape> s = random_model_preset(shape);
  if (!s) return invalid_argument("unknown model shape '" + shape + "'");
  if (greedy_cycle < 0 || greedy_cycle > s->n_vocab) {
    return invalid_argument("greedy cycle " + std::to_string(greedy_cycle) + " is outside 0.." +
                            std::to_string(s->n_vocab) + " (the vocabulary)");
  }
  s->greedy_cycle = greedy_cycle;
  const std::optional<QuantScheme> scheme = quant_scheme_from_name(dtype);
  if (!scheme) return invalid_argument("unknown weight type '" + dtype + "'");
  ThreadPool pool(std::max(1, threads));
  RandomModelSummary summary;
  TESSERA_RETURN_IF_ERROR(tessera::write_random_model(*s, *scheme, seed, pool, out_path, &summary.notes));
  return summary;
}

}  // namespace tessera::tools
