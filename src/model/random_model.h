// Writes GGUF files of Llama-family models with random weights in the shapes
// of real models, so speed can be measured at realistic sizes (and tests can
// synthesise models) without downloading anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/quantize_model.h"
#include "tessera/status.h"

namespace tessera {

struct RandomModelShape {
  std::string name;
  int n_vocab = 512;
  int n_embd = 64;
  int n_layers = 2;
  int n_ff = 128;
  int n_heads = 4;
  int n_kv_heads = 2;
  int context_length = 2048;
  float rope_freq_base = 10000.0f;
  bool tied_output = false;  // no output.weight: the head reuses token_embd
};

// Presets: "tinyllama-1.1b", "llama-3.2-1b", "tiny". nullopt for other names.
std::optional<RandomModelShape> random_model_preset(std::string_view name);
// Names of all presets, for --help.
std::vector<std::string> random_model_preset_names();

// Serialises a model of `shape` with matrices typed by `scheme` (a single
// dtype or a mix such as q4_k_m; matrices whose rows do not fit the block
// size fall back per quant_fallback_type), norms in f32, and a
// synthetic SentencePiece vocabulary (<unk>, <s>, </s>, 256 byte tokens, then
// filler pieces). Weights are uniform with std 0.02, norms near 1; the same
// seed gives the same bytes. Errors: inconsistent shapes.
Result<std::vector<uint8_t>> random_model_gguf(const RandomModelShape& shape, const QuantScheme& scheme,
                                               uint64_t seed, ThreadPool& pool);
// The same with every matrix in `dtype`.
Result<std::vector<uint8_t>> random_model_gguf(const RandomModelShape& shape, DType dtype, uint64_t seed,
                                               ThreadPool& pool);
// random_model_gguf written to `path`.
Status write_random_model(const RandomModelShape& shape, const QuantScheme& scheme, uint64_t seed, ThreadPool& pool,
                          const std::string& path);
// The same with every matrix in `dtype`.
Status write_random_model(const RandomModelShape& shape, DType dtype, uint64_t seed, ThreadPool& pool,
                          const std::string& path);

}  // namespace tessera
