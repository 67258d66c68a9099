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
  // 0: plain random weights. N >= 1: weights under which greedy decoding
  // cycles with period N — a synthetic stand-in for a trained model that
  // repeats its context, for measuring speculative decoding at real shapes
  // (random weights never repeat, so proposals would never be accepted).
  // Tokens 3.. fall into groups of N consecutive ids (a last partial group
  // and tokens 0..2 map to themselves); the greedy successor of token t is the
  // next id of its group, wrapping. How: output.weight row succ(t) is
  // token_embd row t (the same bytes; the model is never tied then), and the
  // attention and FFN norm weights are scaled by 1e-3 so the blocks add
  // little to the residual — the head sees roughly the input embedding, whose
  // dot product with itself (~n_embd * 4e-4 / rms) dwarfs that with any other
  // row. Every matrix keeps its real shape, so the compute is a real model's.
  int greedy_cycle = 0;
};

// The greedy successor of `token` in a model written with greedy_cycle = n
// (n >= 1, token in [0, n_vocab)); see RandomModelShape::greedy_cycle.
int32_t greedy_cycle_successor(int32_t token, int n, int n_vocab);

// Presets: "tinyllama-1.1b", "llama-3.2-1b", "tiny". nullopt for other names.
std::optional<RandomModelShape> random_model_preset(std::string_view name);
// Names of all presets, for --help.
std::vector<std::string> random_model_preset_names();

// Serialises a model of `shape` with matrices typed by `scheme` (a single
// dtype or a mix such as q4_k_m; matrices whose rows do not fit the block
// size fall back per quant_fallback_type), norms in f32, and a
// synthetic SentencePiece vocabulary (<unk>, <s>, </s>, 256 byte tokens, then
// filler pieces). Weights are uniform with std 0.02, norms near 1; the same
// seed gives the same bytes. `notes` (optional, appended to): one
// quant_fallback_note line per matrix that fell back. Errors: inconsistent
// shapes.
Result<std::vector<uint8_t>> random_model_gguf(const RandomModelShape& shape, const QuantScheme& scheme, uint64_t seed,
                                               ThreadPool& pool, std::vector<std::string>* notes = nullptr);
// The same with every matrix in `dtype`.
Result<std::vector<uint8_t>> random_model_gguf(const RandomModelShape& shape, DType dtype, uint64_t seed,
                                               ThreadPool& pool);
// random_model_gguf written to `path`.
Status write_random_model(const RandomModelShape& shape, const QuantScheme& scheme, uint64_t seed, ThreadPool& pool,
                          const std::string& path, std::vector<std::string>* notes = nullptr);
// The same with every matrix in `dtype`.
Status write_random_model(const RandomModelShape& shape, DType dtype, uint64_t seed, ThreadPool& pool,
                          const std::string& path);

}  // namespace tessera
