// tools::inspect (tessera/tools.h): the report `tessera inspect` prints for a
// GGUF file or a Hugging Face directory: metadata, tensors, parameter and
// byte counts, the model configuration and the KV bytes per token.
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "formats/safetensors.h"
#include "kv/kv_cache_spec.h"
#include "model/hf_config.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/shard.h"
#include "model/tensor_names.h"
#include "tessera/byte_size.h"
#include "tessera/tools.h"

namespace tessera::tools {
namespace {

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? " x " : "") + std::to_string(s[i]);
  return out;
}

// `weights`: the first Q projection's type, when known (for --kv-cache-dtype auto).
void print_config(std::string& out, const ModelConfig& c, std::optional<DType> weights) {
  KvCacheSpec spec;
  spec.n_layers = c.n_layers;
  spec.n_kv_heads = c.n_kv_heads;
  spec.head_dim = c.head_dim;
  out += fmt::format(
      "architecture: {}, layers {}, embedding {}, feed-forward {}, heads {} (kv {}), head dim {}, rope dims {}, "
      "rope base {}, context {}\n",
      c.architecture, c.n_layers, c.n_embd, c.n_ff, c.n_heads, c.n_kv_heads, c.head_dim, c.n_rot, c.rope_freq_base,
      c.context_length);
  if (c.n_vocab > 0) out += fmt::format("vocabulary: {} tokens, rms eps {}\n", c.n_vocab, c.rms_eps);
  if (c.rope_scaling.type == RopeScalingType::kLinear) {
    out += fmt::format("rope scaling: linear, factor {}\n", c.rope_scaling.factor);
  } else if (c.rope_scaling.type == RopeScalingType::kLlama3) {
    out += fmt::format("rope scaling: llama3, factor {}, low/high frequency factors {}/{}, original context {}\n",
                       c.rope_scaling.factor, c.rope_scaling.low_freq_factor, c.rope_scaling.high_freq_factor,
                       c.rope_scaling.original_context);
  } else if (!c.rope_freq_factors.empty()) {
    out += fmt::format("rope scaling: per-frequency factors ({})\n", gguf_tensor_name(TensorRole::kRopeFreqs));
  }
  out += fmt::format("KV bytes per token (f16): {} = 2 x {} layers x {} kv heads x {} head dim x 2 bytes\n",
                     spec.bytes_per_token(), spec.n_layers, spec.n_kv_heads, spec.head_dim);
  if (weights) {
    spec.dtype = auto_kv_dtype(*weights);
    out += fmt::format("KV cache dtype under --kv-cache-dtype auto: {} ({} weights), {} bytes per token\n",
                       kv_dtype_name(spec.dtype), dtype_name(*weights), spec.bytes_per_token());
  }
}

Result<std::string> inspect_gguf(const std::string& path) {
  std::string out;
  auto file = GgufFile::open(path);
  if (!file.ok()) return file.status();
  const GgufFile& g = *file;
  out += fmt::format("file: {} (GGUF v{}, {}, alignment {}, data at offset {})\n", path, g.version(),
                     format_byte_size(g.file_size()), g.alignment(), g.data_offset());
  out += fmt::format("\nmetadata ({} keys):\n", g.metadata().size());
  for (const auto& kv : g.metadata()) {
    out += fmt::format("  {:<44} {:<8} {}\n", kv.key, gguf_type_name(kv.value.type), kv.value.to_string());
  }
  out += fmt::format("\ntensors ({}):\n  {:<36} {:<8} {:<20} {:>12}\n", g.tensors().size(), "name", "type", "shape",
                     "bytes");
  int64_t params = 0;
  uint64_t bytes = 0;
  std::optional<DType> q_type;  // blk.0.attn_q / attn_qkv
  for (const auto& t : g.tensors()) {
    if (!q_type && t.name.find("attn_q") != std::string::npos) q_type = t.dtype;
    out += fmt::format("  {:<36} {:<8} {:<20} {:>12}\n", t.name, ggml_type_name(t.ggml_type), shape_string(t.shape),
                       t.n_bytes);
    params += t.n_elements;
    bytes += t.n_bytes;
  }
  out += fmt::format("\nparameters: {} ({:.2f} M)\nweight bytes: {} ({})\n", params, static_cast<double>(params) / 1e6,
                     bytes, format_byte_size(bytes));
  auto config = model_config_from_gguf(g);
  if (!config.ok()) {
    out += fmt::format("model config: {}\n", config.status().message());
    return out;
  }
  print_config(out, *config, q_type);
  return out;
}

// A Hugging Face directory: config.json hyperparameters and the safetensors tensors.
Result<std::string> inspect_hf_dir(const std::string& dir) {
  std::string out;
  const std::filesystem::path d(dir);
  const std::string config_path = (d / "config.json").string();
  std::ifstream in(config_path, std::ios::binary);
  if (!in) return not_found(config_path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  auto config = model_config_from_hf_json(text.str(), config_path);
  if (!config.ok()) return config.status();
  auto ckpt = SafetensorsCheckpoint::open_dir(dir);
  if (!ckpt.ok()) return ckpt.status();
  out += fmt::format("directory: {} (Hugging Face, {} safetensors file{})\n", dir, ckpt->files().size(),
                     ckpt->files().size() == 1 ? "" : "s");
  for (const auto& f : ckpt->files()) out += fmt::format("  {} ({})\n", f.name(), format_byte_size(f.file_size()));
  for (const char* f : {"generation_config.json", "tokenizer.json", "tokenizer_config.json"}) {
    out += fmt::format("  {}: {}\n", f, std::filesystem::exists(d / f) ? "present" : "absent");
  }
  const auto tensors = ckpt->tensors();
  out += fmt::format(
      "\ntensors ({}, shapes as stored: row-major, last dimension contiguous):\n  {:<52} {:<8} {:<20} {:>12}\n",
      tensors.size(), "name", "type", "shape", "bytes");
  int64_t params = 0;
  uint64_t bytes = 0;
  std::optional<DType> q_type;  // q_proj / qkv_proj
  for (const SafetensorsTensor* t : tensors) {
    if (!q_type && (t->name.find("q_proj") != std::string::npos || t->name.find("qkv_proj") != std::string::npos)) {
      q_type = t->dtype;
    }
    out += fmt::format("  {:<52} {:<8} {:<20} {:>12}\n", t->name, dtype_name(t->dtype), shape_string(t->shape),
                       t->n_bytes);
    params += t->n_elements;
    bytes += t->n_bytes;
  }
  out += fmt::format("\nparameters: {} ({:.2f} M)\nweight bytes: {} ({})\n", params, static_cast<double>(params) / 1e6,
                     bytes, format_byte_size(bytes));
  print_config(out, *config, q_type);
  return out;
}

}  // namespace

Result<std::string> inspect(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return inspect_hf_dir(path);
  return inspect_gguf(path);
}

Result<std::string> inspect(const std::string& path, const ParallelOptions& parallel) {
  TESSERA_ASSIGN_OR_RETURN(std::string out, inspect(path));
  if (parallel.world_size() <= 1) return out;
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(path));
  const ModelConfig& c = model->config();
  const ParallelLayout layout{parallel.tensor_parallel_size, parallel.pipeline_parallel_size, parallel.pp_layer_split};
  const auto& layers = model->weights().layers;
  const KvDtype kv = auto_kv_dtype(layers.empty() ? DType::kF16 : layers.front().wq.dtype);
  const uint64_t embd_bytes = model->weights().token_embd.bytes();
  out += fmt::format(
      "\ntensor parallel {} x pipeline parallel {} = {} ranks (mpirun -np {}):\n"
      "  {:>4} {:>5} {:>7} {:>5} {:>8} {:>8} {:>10} {:>14} {:>14}\n",
      layout.tp_size, layout.pp_size, layout.world_size(), layout.world_size(), "rank", "stage", "layers", "heads",
      "kv heads", "ffn rows", "vocab rows", "weight bytes", "KV bytes/token");
  uint64_t total = 0;
  for (int r = 0; r < layout.world_size(); ++r) {
    TESSERA_ASSIGN_OR_RETURN(ShardPlan p, plan_shard(c, model->weights(), layout, r));
    TESSERA_ASSIGN_OR_RETURN(ShardedWeights w, shard_weights(model->weights(), c, p, /*copy=*/false));
    KvCacheSpec spec;
    spec.n_layers = p.n_layers();
    spec.n_kv_heads = p.n_kv_heads;
    spec.head_dim = c.head_dim;
    spec.dtype = kv;
    const uint64_t bytes = w.matrix_bytes();
    total += bytes;
    out += fmt::format("  {:>4} {:>5} {:>7} {:>5} {:>8} {:>8} {:>10} {:>14} {:>14}\n", r, p.stage,
                       fmt::format("{}-{}", p.layer_begin, p.layer_end - 1), p.n_heads, p.n_kv_heads, p.n_ff,
                       p.last_stage() ? p.n_vocab : 0, bytes, spec.bytes_per_token());
  }
  out += fmt::format(
      "weight bytes: the matrices each rank prepares ({} on one rank: {}; all ranks together {}); stage 0 also maps "
      "the {} token embedding, of which only the rows of seen tokens are read. KV bytes/token in {} "
      "(--kv-cache-dtype auto); --kv-cache-memory is per rank.\n",
      model->weights().matrix_bytes(), format_byte_size(model->weights().matrix_bytes()), total,
      format_byte_size(embd_bytes), kv_dtype_name(kv));
  return out;
}

}  // namespace tessera::tools
