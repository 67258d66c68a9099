#include "model/convert_hf.h"

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "core/quant_ref.h"
#include "formats/gguf_reader.h"
#include "formats/safetensors.h"
#include "model/hf_tensor_source.h"
#include "model/model.h"
#include "model/tensor_names.h"
#include "tokenizer/bpe_tokenizer.h"

namespace tessera {

namespace {

constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION

// tie_word_embeddings from config.json (false when absent or unreadable).
bool tied_embeddings(const std::filesystem::path& dir) {
  std::ifstream in(dir / "config.json");
  std::ostringstream ss;
  ss << in.rdbuf();
  const auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  const auto it = j.find("tie_word_embeddings");
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

void add_hparams(GgufWriter& w, const ModelConfig& c, const std::string& name, DType dtype) {
  const std::string a = c.architecture + ".";
  w.add_string("general.architecture", c.architecture);
  w.add_string("general.name", name);
  w.add_uint32("general.file_type", gguf_file_type(dtype));
  w.add_uint32("general.quantization_version", kQuantizationVersion);
  w.add_uint32(a + "context_length", static_cast<uint32_t>(c.context_length));
  w.add_uint32(a + "embedding_length", static_cast<uint32_t>(c.n_embd));
  w.add_uint32(a + "block_count", static_cast<uint32_t>(c.n_layers));
  w.add_uint32(a + "feed_forward_length", static_cast<uint32_t>(c.n_ff));
  w.add_uint32(a + "attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.add_uint32(a + "attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  if (c.head_dim != c.n_embd / c.n_heads) {
    w.add_uint32(a + "attention.key_length", static_cast<uint32_t>(c.head_dim));
    w.add_uint32(a + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  }
  w.add_uint32(a + "rope.dimension_count", static_cast<uint32_t>(c.n_rot));
  w.add_float32(a + "rope.freq_base", c.rope_freq_base);
  w.add_float32(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
  if (c.rope_scaling.type == RopeScalingType::kLinear) {
    w.add_string(a + "rope.scaling.type", "linear");
    w.add_float32(a + "rope.scaling.factor", c.rope_scaling.factor);
  }
}

// Llama 3 frequency divisors as llama.cpp's converter computes them:
// rope_freqs[i] = unscaled inv_freq[i] / scaled inv_freq[i].
std::vector<float> llama3_rope_freqs(const ModelConfig& c) {
  ModelConfig plain = c;
  plain.rope_scaling = RopeScaling{};
  const std::vector<float> base = plain.rope_inv_freq();
  const std::vector<float> scaled = c.rope_inv_freq();
  std::vector<float> out(base.size());
  for (size_t i = 0; i < base.size(); ++i) out[i] = base[i] / scaled[i];
  return out;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// GGUF tensor names of the model, in llama.cpp's order.
std::vector<std::string> tensor_names(const ModelConfig& c, bool with_output) {
  std::vector<std::string> names = {gguf_tensor_name(TensorRole::kTokenEmbd),
                                    gguf_tensor_name(TensorRole::kOutputNorm)};
  if (with_output) names.push_back(gguf_tensor_name(TensorRole::kOutput));
  for (int i = 0; i < c.n_layers; ++i) {
    auto add = [&names, i](TensorRole role) { names.push_back(gguf_tensor_name(role, i)); };
    add(TensorRole::kAttnNorm);
    if (c.arch.fused_qkv) {
      add(TensorRole::kAttnQkv);
    } else {
      for (TensorRole r : {TensorRole::kAttnQ, TensorRole::kAttnK, TensorRole::kAttnV}) add(r);
    }
    if (c.arch.qkv_bias) {
      for (TensorRole r : {TensorRole::kAttnQBias, TensorRole::kAttnKBias, TensorRole::kAttnVBias}) add(r);
    }
    if (c.arch.qk_norm) {
      add(TensorRole::kAttnQNorm);
      add(TensorRole::kAttnKNorm);
    }
    add(TensorRole::kAttnOutput);
    add(TensorRole::kFfnNorm);
    if (!c.arch.fused_gate_up) add(TensorRole::kFfnGate);
    add(TensorRole::kFfnUp);
    add(TensorRole::kFfnDown);
  }
  return names;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Converts one tensor: dequantize each row, optionally take rows in Llama
// RoPE order, quantize to `out`.
std::vector<uint8_t> convert_tensor(const TensorRef& t, DType out, int64_t permute_head_dim) {
  const int64_t cols = t.shape[0];
  int64_t rows = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) rows *= t.shape[i];
  const size_t src_row = dtype_row_bytes(*t.dtype, cols);
  const size_t dst_row = dtype_row_bytes(out, cols);
  std::vector<uint8_t> bytes(dst_row * static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  const auto* src = static_cast<const uint8_t*>(t.data);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t from = permute_head_dim > 0 ? llama_rope_row(r, permute_head_dim) : r;
    dequantize_row(*t.dtype, src + static_cast<size_t>(from) * src_row, row.data(), cols);
    quantize_row(out, row.data(), bytes.data() + static_cast<size_t>(r) * dst_row, cols);
  }
  return bytes;
}

// Token ids of some probe texts, for checking that a GGUF tokenizer matches.
std::vector<std::vector<int32_t>> probe(const Tokenizer& tok) {
  static const std::array<std::string_view, 5> kTexts = {
      "Hello world! It's 2024: naïve café, 12345 + 678 = ?",
      "  leading spaces\tand\ttabs\n\nnew lines   and   runs",
      "日本語のテキスト, русский текст, emoji 🙂🚀",
      "I'm you're we'll they'd HELLO World's",
      "def f(x):\n    return x**2  # comment",
  };
  std::vector<std::vector<int32_t>> out;
  for (std::string_view t : kTexts) out.push_back(tok.encode(t, true, true));
  return out;
}

// The tokenizer a GGUF holding `w`'s tokenizer metadata would give, or null.
std::unique_ptr<Tokenizer> reload_tokenizer(const GgufWriter& w) {
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return nullptr;
  auto file = GgufFile::parse(bytes->data(), bytes->size(), "probe");
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(*file);
  return tok.ok() ? std::move(tok).value() : nullptr;
}

// Adds the tokenizer, choosing tokenizer.ggml.pre (gpt2) among llama.cpp's
// presets as the first one that encodes the probe texts as tokenizer.json does.
void add_tokenizer(GgufWriter& w, const Tokenizer& tok, const ModelConfig& c, int32_t eos_fallback,
                   ConvertSummary& summary) {
  std::vector<std::string> presets = {"default",        "llama-bpe", "qwen2",    "deepseek-llm",
                                      "deepseek-coder", "falcon",    "starcoder"};
  if (c.architecture == "qwen2" || c.architecture == "qwen3") std::swap(presets[0], presets[2]);
  const auto want = probe(tok);
  for (const std::string& pre : presets) {
    GgufWriter probe_writer;
    const std::string model = add_tokenizer_metadata(probe_writer, tok, c.n_vocab, pre, eos_fallback);
    auto reloaded = reload_tokenizer(probe_writer);
    const bool same = reloaded != nullptr && probe(*reloaded) == want;
    if (same || model != "gpt2" || &pre == &presets.back()) {
      add_tokenizer_metadata(w, tok, c.n_vocab, pre, eos_fallback);
      if (!same) {
        summary.notes.push_back("the GGUF tokenizer (" + model + (model == "gpt2" ? ", pre " + pre : "") +
                                ") encodes some probe texts differently from tokenizer.json");
      } else if (model == "gpt2") {
        summary.notes.push_back("tokenizer: gpt2 with pre-tokenizer preset '" + pre + "'");
      }
      return;
    }
  }
}

}  // namespace

int64_t llama_rope_row(int64_t row, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  const int64_t head = row / head_dim;
  const int64_t w = row % head_dim;
  return head * head_dim + (w % 2) * half + w / 2;
}

uint32_t gguf_file_type(DType dtype) {
  if (dtype == DType::kF16) return 1;
  if (dtype == DType::kQ4_0) return 2;
  if (dtype == DType::kQ8_0) return 7;
  if (dtype == DType::kBF16) return 32;
  return 0;
}

std::string add_tokenizer_metadata(GgufWriter& w, const Tokenizer& tok, int n_vocab, const std::string& pre,
                                   int32_t eos_fallback) {
  const Vocabulary& v = tok.vocabulary();
  const auto* bpe = dynamic_cast<const BpeTokenizer*>(&tok);
  const bool byte_level = bpe == nullptr || bpe->config().decode_byte_level;
  const std::string model = byte_level ? "gpt2" : "llama";
  const auto n = static_cast<size_t>(std::max<int>(n_vocab, tok.n_vocab()));
  std::vector<std::string> tokens(n);
  std::vector<float> scores(n, 0.0f);
  std::vector<int32_t> types(n, static_cast<int32_t>(TokenType::kUnused));
  for (size_t i = 0; i < n; ++i) {
    if (i < v.tokens.size() && !v.tokens[i].empty()) {
      tokens[i] = v.tokens[i];
      scores[i] = v.scores[i];
      types[i] = static_cast<int32_t>(v.types[i] == TokenType::kUndefined ? TokenType::kNormal : v.types[i]);
    } else {
      tokens[i] = "[PAD" + std::to_string(i) + "]";  // llama.cpp's filler for ids without a token
    }
  }
  if (model == "llama" && bpe != nullptr) {
    // SentencePiece ranks merges by the score of the merged token: the
    // earliest merge that builds a token gives it score -rank.
    std::unordered_map<std::string, size_t> first_rank;
    const auto merges = bpe->ranked_merges();
    for (size_t r = 0; r < merges.size(); ++r) first_rank.emplace(merges[r].first + merges[r].second, r);
    for (size_t i = 0; i < n; ++i) {
      const auto it = first_rank.find(tokens[i]);
      const bool normal = types[i] == static_cast<int32_t>(TokenType::kNormal);
      if (normal) scores[i] = it != first_rank.end() ? -static_cast<float>(it->second) : -1e9f;
    }
  }
  w.add_string("tokenizer.ggml.model", model);
  if (model == "gpt2") w.add_string("tokenizer.ggml.pre", pre);
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_float32_array("tokenizer.ggml.scores", scores);
  w.add_int32_array("tokenizer.ggml.token_type", types);
  if (model == "gpt2" && bpe != nullptr) {
    std::vector<std::string> merges;
    for (const auto& [l, r] : bpe->ranked_merges()) merges.push_back(l + " " + r);
    w.add_string_array("tokenizer.ggml.merges", merges);
  }
  const int32_t eos = v.eos_id >= 0 ? v.eos_id : eos_fallback;
  const std::pair<const char*, int32_t> ids[] = {
      {"tokenizer.ggml.bos_token_id", v.bos_id},     {"tokenizer.ggml.eos_token_id", eos},
      {"tokenizer.ggml.unknown_token_id", v.unk_id}, {"tokenizer.ggml.padding_token_id", v.pad_id},
      {"tokenizer.ggml.eot_token_id", v.eot_id},     {"tokenizer.ggml.eom_token_id", v.eom_id},
  };
  for (const auto& [key, id] : ids) {
    if (id >= 0 && static_cast<size_t>(id) < n) w.add_uint32(key, static_cast<uint32_t>(id));
  }
  w.add_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.add_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  if (model == "llama") w.add_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
  if (!v.chat_template.empty()) w.add_string("tokenizer.chat_template", v.chat_template);
  return model;
}

Result<ConvertSummary> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                          const ConvertOptions& options) {
  const DType out = options.dtype;
  if (out != DType::kF32 && out != DType::kF16 && out != DType::kBF16 && out != DType::kQ8_0) {
    return invalid_argument(std::string("convert: unsupported output type ") + dtype_name(out) +
                            " (use f32, f16, bf16 or q8_0)");
  }
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(hf_dir));
  const ModelConfig& c = model->config();
  const bool permute = c.arch.gguf_rope_style == RopeStyle::kNorm;
  if (permute && c.head_dim % 2 != 0) {
    return invalid_argument(hf_dir + ": head_dim " + std::to_string(c.head_dim) + " is odd; cannot permute for RoPE");
  }
  TESSERA_ASSIGN_OR_RETURN(SafetensorsCheckpoint ckpt, SafetensorsCheckpoint::open_dir(hf_dir));
  const HfTensorSource source(ckpt, c.arch, hf_dir);

  const std::filesystem::path dir(hf_dir);
  std::string name = c.name;
  if (name.empty()) name = std::filesystem::absolute(dir).lexically_normal().filename().string();
  if (name.empty()) name = std::filesystem::absolute(dir).lexically_normal().parent_path().filename().string();

  ConvertSummary summary;
  GgufWriter w;
  add_hparams(w, c, name, out);
  if (model->has_tokenizer()) {
    const auto& eos = model->generation_defaults().eos_token_ids;
    add_tokenizer(w, model->tokenizer(), c, eos.empty() ? -1 : eos.front(), summary);
    summary.wrote_tokenizer = true;
  }

  const bool with_output = source.find(gguf_tensor_name(TensorRole::kOutput)).has_value() && !tied_embeddings(dir);
  bool noted_q8_fallback = false;
  for (const std::string& gguf_name : tensor_names(c, with_output)) {
    const std::optional<TensorRef> t = source.find(gguf_name);
    if (!t || !t->dtype) return not_found(hf_dir + ": missing tensor for '" + gguf_name + "'");
    DType type = t->shape.size() >= 2 ? out : DType::kF32;
    if (type == DType::kQ8_0 && t->shape[0] % kQuantBlockElems != 0) {
      type = DType::kF16;
      if (!noted_q8_fallback) {
        summary.notes.push_back("rows of " + std::to_string(t->shape[0]) +
                                " elements are not whole q8_0 blocks of 32; " + gguf_name +
                                " (and any like it) written as f16");
        noted_q8_fallback = true;
      }
    }
    const bool rope_rows = permute && (ends_with(gguf_name, tensor_name_entry(TensorRole::kAttnQ).gguf) ||
                                       ends_with(gguf_name, tensor_name_entry(TensorRole::kAttnK).gguf));
    std::vector<uint8_t> bytes = convert_tensor(*t, type, rope_rows ? c.head_dim : 0);
    int64_t elems = 1;
    for (int64_t d : t->shape) elems *= d;
    summary.n_parameters += elems;
    summary.tensor_bytes += bytes.size();
    ++summary.n_tensors;
    w.add_tensor(gguf_name, t->shape, type, std::move(bytes));
  }
  if (c.rope_scaling.type == RopeScalingType::kLlama3) {
    const std::vector<float> freqs = llama3_rope_freqs(c);
    summary.tensor_bytes += freqs.size() * sizeof(float);
    ++summary.n_tensors;
    w.add_tensor(gguf_tensor_name(TensorRole::kRopeFreqs), {static_cast<int64_t>(freqs.size())}, DType::kF32,
                 f32_bytes(freqs));
  }
  TESSERA_RETURN_IF_ERROR(w.write(out_path));
  return summary;
}

}  // namespace tessera
