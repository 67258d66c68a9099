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

namespace {

// An output path a command can write: not empty, not a directory, in a
// directory that exists. Checked before any work, so a long conversion does
// not end in "cannot create".
Status check_output_path(const std::string& out_path) {
  std::error_code ec;
  if (out_path.empty()) return invalid_argument("the output path is empty");
  if (std::filesystem::is_directory(out_path, ec)) {
    return invalid_argument("the output " + out_path + " is a directory: name a file");
  }
  const std::filesystem::path dir = std::filesystem::path(out_path).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    return not_found(out_path + ": cannot create: no directory " + dir.string());
  }
  return {};
}

// The output would overwrite the input while it is read (and the input is
// lost): the same path, a hard link or a symlink to it, or, for a Hugging
// Face directory, an existing file inside it (its safetensors, config or
// tokenizer); or the output path is not writable (check_output_path).
Status check_output_is_not_input(const std::string& in_path, const std::string& out_path) {
  TESSERA_RETURN_IF_ERROR(check_output_path(out_path));
  std::error_code ec;
  if (!std::filesystem::exists(out_path, ec)) return {};
  if (std::filesystem::equivalent(in_path, out_path, ec) && !ec) {
    return invalid_argument("the output " + out_path + " is the input file: write to another path");
  }
  if (std::filesystem::is_directory(in_path, ec)) {
    const std::filesystem::path in_dir = std::filesystem::canonical(in_path, ec);
    const std::filesystem::path out = std::filesystem::canonical(out_path, ec);
    if (!ec) {
      for (std::filesystem::path d = out.parent_path(); !d.empty(); d = d.parent_path()) {
        if (d == in_dir) {
          return invalid_argument("the output " + out_path + " is a file of the input directory " + in_path +
                                  ": write to another path");
        }
        if (d == d.root_path()) break;
      }
    }
  }
  return {};
}

}  // namespace

std::vector<std::string> convert_dtype_names() {
  return {"f32", "f16", "bf16", "q8_0"};
}

Result<ConvertSummary> convert_hf(const std::string& hf_dir, const std::string& out_path,
                                  const ConvertOptions& options) {
  const std::vector<std::string> names = convert_dtype_names();
  if (std::find(names.begin(), names.end(), options.dtype) == names.end()) {
    return invalid_argument("convert: dtype '" + options.dtype + "': expected f32, f16, bf16 or q8_0");
  }
  TESSERA_RETURN_IF_ERROR(check_output_is_not_input(hf_dir, out_path));
  tessera::ConvertOptions internal;
  internal.dtype = *dtype_from_name(options.dtype);
  return convert_hf_to_gguf(hf_dir, out_path, internal);
}

std::vector<std::string> quantize_type_names() {
  return quant_scheme_names();
}

Result<QuantizeSummary> quantize(const std::string& in_path, const std::string& out_path, const std::string& type,
                                 int threads, const Progress& progress) {
  TESSERA_RETURN_IF_ERROR(check_output_is_not_input(in_path, out_path));
  const std::optional<QuantScheme> scheme = quant_scheme_from_name(type);
  if (!scheme) return invalid_argument("unknown quantization type '" + type + "'");
  ThreadPool pool(std::max(1, threads));
  return quantize_model(in_path, out_path, *scheme, pool, progress);
}

std::string quantize_temporary_path(const std::string& out_path) {
  return tessera::quantize_temporary_path(out_path);
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
  TESSERA_RETURN_IF_ERROR(check_output_path(out_path));
  ThreadPool pool(std::max(1, threads));
  RandomModelSummary summary;
  TESSERA_RETURN_IF_ERROR(tessera::write_random_model(*s, *scheme, seed, pool, out_path, &summary.notes));
  return summary;
}

}  // namespace tessera::tools
