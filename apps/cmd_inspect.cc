// `tessera inspect`: metadata, tensor table and memory arithmetic of a model file.
#include <fmt/core.h>

#include <memory>

#include "cli_common.h"
#include "core/byte_size.h"
#include "formats/gguf_reader.h"
#include "kv/kv_cache_spec.h"
#include "model/model_config.h"

namespace tessera::cli {

namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? " x " : "") + std::to_string(s[i]);
  return out;
}

int inspect_main(const std::string& path) {
  auto file = GgufFile::open(path);
  if (!file.ok()) return fail(file.status());
  const GgufFile& g = *file;
  fmt::print("file: {} (GGUF v{}, {}, alignment {}, data at offset {})\n", path, g.version(),
             format_byte_size(g.file_size()), g.alignment(), g.data_offset());
  fmt::print("\nmetadata ({} keys):\n", g.metadata().size());
  for (const auto& kv : g.metadata()) {
    fmt::print("  {:<44} {:<8} {}\n", kv.key, gguf_type_name(kv.value.type), kv.value.to_string());
  }
  fmt::print("\ntensors ({}):\n  {:<36} {:<8} {:<20} {:>12}\n", g.tensors().size(), "name", "type", "shape", "bytes");
  int64_t params = 0;
  uint64_t bytes = 0;
  for (const auto& t : g.tensors()) {
    fmt::print("  {:<36} {:<8} {:<20} {:>12}\n", t.name, ggml_type_name(t.ggml_type), shape_string(t.shape), t.n_bytes);
    params += t.n_elements;
    bytes += t.n_bytes;
  }
  fmt::print("\nparameters: {} ({:.2f} M)\nweight bytes: {} ({})\n", params, static_cast<double>(params) / 1e6, bytes,
             format_byte_size(bytes));
  auto config = model_config_from_gguf(g);
  if (!config.ok()) {
    fmt::print("model config: {}\n", config.status().message());
    return 0;
  }
  KvCacheSpec spec;
  spec.n_layers = config->n_layers;
  spec.n_kv_heads = config->n_kv_heads;
  spec.head_dim = config->head_dim;
  fmt::print(
      "architecture: {}, layers {}, embedding {}, feed-forward {}, heads {} (kv {}), head dim {}, rope dims {}, "
      "rope base {}, context {}\n",
      config->architecture, config->n_layers, config->n_embd, config->n_ff, config->n_heads, config->n_kv_heads,
      config->head_dim, config->n_rot, config->rope_freq_base, config->context_length);
  fmt::print("KV bytes per token (f16): {} = 2 x {} layers x {} kv heads x {} head dim x 2 bytes\n",
             spec.bytes_per_token(), spec.n_layers, spec.n_kv_heads, spec.head_dim);
  return 0;
}

}  // namespace

Runner register_inspect(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("inspect", "Print a model file's metadata, tensors and memory arithmetic");
  sub->add_option("model", *path, "Model file (GGUF)")->required();
  return [path] { return inspect_main(*path); };
}

}  // namespace tessera::cli
