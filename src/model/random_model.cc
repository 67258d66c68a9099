#include "model/random_model.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "core/quant_ref.h"
#include "formats/gguf_writer.h"
#include "model/tensor_names.h"

namespace tessera {

namespace {

// xorshift64* stream: cheap and reproducible per (seed, tensor, row).
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull) {
    if (s == 0) s = 1;
  }
  float uniform() {  // [-1, 1)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<float>((s * 0x2545f4914f6cdd1dull) >> 40) * 0x1.0p-23f - 1.0f;
  }
};

// Row r of the matrix holds the random row source_row(r) of the stream
// `seed` (the identity when source_row is null).
std::vector<uint8_t> random_matrix(int64_t rows, int64_t cols, DType dtype, uint64_t seed, ThreadPool& pool,
                                   const std::function<int64_t(int64_t)>& source_row = nullptr) {
  const size_t row_bytes = dtype_row_bytes(dtype, cols);
  std::vector<uint8_t> out(static_cast<size_t>(rows) * row_bytes);
  const float amp = 0.02f * std::sqrt(3.0f);  // uniform with std 0.02
  pool.parallel_for(rows, [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = b; r < e; ++r) {
      const int64_t src = source_row ? source_row(r) : r;
      Rng rng(seed ^ (static_cast<uint64_t>(src) << 20));
      for (auto& v : row) v = rng.uniform() * amp;
      quantize_row(dtype, row.data(), out.data() + static_cast<size_t>(r) * row_bytes, cols);
    }
  });
  return out;
}

std::vector<uint8_t> norm_vector(int64_t n, uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  Rng rng(seed);
  for (auto& x : v) x = scale * (1.0f + 0.1f * rng.uniform());
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

}  // namespace

int32_t greedy_cycle_successor(int32_t token, int n, int n_vocab) {
  constexpr int32_t kFirst = 3;  // <unk>, <s>, </s> map to themselves
  if (n <= 1 || token < kFirst) return token;
  const int32_t group = (token - kFirst) / n, pos = (token - kFirst) % n;
  if (kFirst + static_cast<int64_t>(group + 1) * n > n_vocab) return token;  // the last partial group
  return kFirst + group * n + (pos + 1) % n;
}

std::optional<RandomModelShape> random_model_preset(std::string_view name) {
  if (name == "tinyllama-1.1b")
    return RandomModelShape{"tinyllama-1.1b", 32000, 2048, 22, 5632, 32, 4, 2048, 10000.0f, false};
  if (name == "llama-3.2-1b")
    return RandomModelShape{"llama-3.2-1b", 128256, 2048, 16, 8192, 32, 8, 131072, 500000.0f, true};
  if (name == "tiny") return RandomModelShape{"tiny", 512, 64, 2, 128, 4, 2, 2048, 10000.0f, false};
  return std::nullopt;
}

std::vector<std::string> random_model_preset_names() {
  return {"tinyllama-1.1b", "llama-3.2-1b", "tiny"};
}

namespace {

Result<GgufWriter> build_writer(const RandomModelShape& s, const QuantScheme& scheme, uint64_t seed, ThreadPool& pool,
                                std::vector<std::string>* notes) {
  if (s.n_embd % s.n_heads != 0 || s.n_heads % s.n_kv_heads != 0 || s.n_vocab < 259 || s.greedy_cycle < 0 ||
      s.greedy_cycle > s.n_vocab) {
    return invalid_argument("shape '" + s.name + "' is inconsistent");
  }
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string(
      "general.name",
      "random " + s.name + (s.greedy_cycle > 0 ? " (greedy cycle " + std::to_string(s.greedy_cycle) + ")" : ""));
  w.add_uint32("llama.context_length", static_cast<uint32_t>(s.context_length));
  w.add_uint32("llama.embedding_length", static_cast<uint32_t>(s.n_embd));
  w.add_uint32("llama.block_count", static_cast<uint32_t>(s.n_layers));
  w.add_uint32("llama.feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.add_uint32("llama.attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.add_uint32("llama.attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  w.add_uint32("llama.rope.dimension_count", static_cast<uint32_t>(s.n_embd / s.n_heads));
  w.add_float32("llama.rope.freq_base", s.rope_freq_base);
  w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.emplace_back(buf);
    scores.push_back(0);
    types.push_back(6);
  }
  for (int i = static_cast<int>(tokens.size()); i < s.n_vocab; ++i) {
    tokens.push_back("\xe2\x96\x81t" + std::to_string(i));
    scores.push_back(-static_cast<float>(i));
    types.push_back(1);
  }
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_float32_array("tokenizer.ggml.scores", scores);
  w.add_int32_array("tokenizer.ggml.token_type", types);
  w.add_uint32("tokenizer.ggml.bos_token_id", 1);
  w.add_uint32("tokenizer.ggml.eos_token_id", 2);
  w.add_uint32("tokenizer.ggml.unknown_token_id", 0);

  const int64_t e = s.n_embd;
  const int64_t hd = e / s.n_heads;
  const int64_t kv = hd * s.n_kv_heads;
  uint64_t tensor_seed = seed;
  w.add_uint32("general.file_type", quant_scheme_file_type(scheme));
  if (dtype_is_quantized(scheme.base)) w.add_uint32("general.quantization_version", 2);
  const bool cycle = s.greedy_cycle > 0;
  const bool has_output = cycle || !s.tied_output;
  auto mat = [&](const std::string& name, int64_t rows, int64_t cols) {
    const DType want = quant_scheme_tensor_type(scheme, name, s.n_layers, has_output);
    const DType dtype = quant_fallback_type(want, cols);
    if (dtype != want && notes) notes->push_back(quant_fallback_note(name, cols, want, dtype));
    w.add_tensor(name, {cols, rows}, dtype, random_matrix(rows, cols, dtype, ++tensor_seed, pool));
  };
  const uint64_t embd_seed = tensor_seed + 1;
  mat(gguf_tensor_name(TensorRole::kTokenEmbd), s.n_vocab, e);
  w.add_tensor(gguf_tensor_name(TensorRole::kOutputNorm), {e}, DType::kF32, norm_vector(e, ++tensor_seed));
  if (cycle) {
    // output.weight row succ(t) = token_embd row t: invert the successor map
    // (a permutation) once, then draw each row from the embedding's stream.
    std::vector<int64_t> pred(static_cast<size_t>(s.n_vocab));
    for (int32_t t = 0; t < s.n_vocab; ++t)
      pred[static_cast<size_t>(greedy_cycle_successor(t, s.greedy_cycle, s.n_vocab))] = t;
    const std::string name = gguf_tensor_name(TensorRole::kOutput);
    // The embedding's type, so the bytes of each pair of rows are the same.
    const DType dtype = quant_fallback_type(
        quant_scheme_tensor_type(scheme, gguf_tensor_name(TensorRole::kTokenEmbd), s.n_layers, true), e);
    ++tensor_seed;  // the stream output.weight would have had
    w.add_tensor(name, {e, s.n_vocab}, dtype, random_matrix(s.n_vocab, e, dtype, embd_seed, pool, [&pred](int64_t r) {
                   return pred[static_cast<size_t>(r)];
                 }));
  } else if (!s.tied_output) {
    mat(gguf_tensor_name(TensorRole::kOutput), s.n_vocab, e);
  }
  const float block_norm_scale = cycle ? 1e-3f : 1.0f;
  for (int l = 0; l < s.n_layers; ++l) {
    auto name = [l](TensorRole role) { return gguf_tensor_name(role, l); };
    w.add_tensor(name(TensorRole::kAttnNorm), {e}, DType::kF32, norm_vector(e, ++tensor_seed, block_norm_scale));
    mat(name(TensorRole::kAttnQ), e, e);
    mat(name(TensorRole::kAttnK), kv, e);
    mat(name(TensorRole::kAttnV), kv, e);
    mat(name(TensorRole::kAttnOutput), e, e);
    w.add_tensor(name(TensorRole::kFfnNorm), {e}, DType::kF32, norm_vector(e, ++tensor_seed, block_norm_scale));
    mat(name(TensorRole::kFfnGate), s.n_ff, e);
    mat(name(TensorRole::kFfnUp), s.n_ff, e);
    mat(name(TensorRole::kFfnDown), e, s.n_ff);
  }
  return w;
}

}  // namespace

Result<std::vector<uint8_t>> random_model_gguf(const RandomModelShape& shape, const QuantScheme& scheme, uint64_t seed,
                                               ThreadPool& pool, std::vector<std::string>* notes) {
  TESSERA_ASSIGN_OR_RETURN(GgufWriter w, build_writer(shape, scheme, seed, pool, notes));
  return w.to_bytes();
}

Result<std::vector<uint8_t>> random_model_gguf(const RandomModelShape& shape, DType dtype, uint64_t seed,
                                               ThreadPool& pool) {
  return random_model_gguf(shape, QuantScheme{std::string(dtype_name(dtype)), dtype, QuantMix::kNone}, seed, pool);
}

Status write_random_model(const RandomModelShape& shape, const QuantScheme& scheme, uint64_t seed, ThreadPool& pool,
                          const std::string& path, std::vector<std::string>* notes) {
  TESSERA_ASSIGN_OR_RETURN(GgufWriter w, build_writer(shape, scheme, seed, pool, notes));
  return w.write(path);
}

Status write_random_model(const RandomModelShape& shape, DType dtype, uint64_t seed, ThreadPool& pool,
                          const std::string& path) {
  return write_random_model(shape, QuantScheme{std::string(dtype_name(dtype)), dtype, QuantMix::kNone}, seed, pool,
                            path);
}

}  // namespace tessera
