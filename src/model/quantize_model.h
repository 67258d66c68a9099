// Quantization schemes and `tessera quantize`: requantizes the matrices of a
// GGUF file (or of a Hugging Face directory, through convert_hf_to_gguf) to
// one of the block formats of core/dtype.h or to a llama.cpp-style mix
// (Q3_K_S/M/L, Q4_K_S/M, Q5_K_S/M), copying every non-tensor metadata key (tokenizer, chat
// template, ...) and updating general.file_type (llama.cpp enum llama_ftype).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/model_weights.h"
#include "tessera/status.h"
#include "tessera/tools.h"

namespace tessera {

// llama.cpp's preset mixes (enum llama_ftype, llama-quant.cpp's per-tensor
// choice for dense models): the base type for most matrices and more bits
// for the ones that matter most. Every mix gives output.weight (or, in a model
// with a tied output, token_embd.weight) Q6_K; then, by the layer i of n:
//   mix      attn_v             ffn_down            attn_output  attn_qkv
//   Q3_K_S   -                  -                   -            -
//   Q3_K_M   Q5_K if i < 2,     Q5_K if i < n / 16, Q4_K         Q4_K
//            else Q4_K          else Q4_K
//   Q3_K_L   Q5_K               Q5_K                Q5_K         Q4_K
//   Q4_K_S   Q5_K if i < 4      Q5_K if i < n / 8   -            -
//   Q4_K_M   Q6_K if more_bits  Q6_K if more_bits   -            Q5_K
//   Q5_K_S   -                  -                   -            -
//   Q5_K_M   Q6_K if more_bits  Q6_K if more_bits   -            Q6_K
// ("-": the base type; more_bits: llama.cpp's use_more_bits(i, n), the first
// and last eighth of the layers and every third layer in between). The
// rules llama.cpp adds for 70B-class, mixture-of-experts and Falcon models
// are not applied.
enum class QuantMix : uint8_t { kNone, kQ3_K_S, kQ3_K_M, kQ3_K_L, kQ4_K_S, kQ4_K_M, kQ5_K_S, kQ5_K_M };

// A target: every matrix in `base` (mix kNone), or one of the mixes above
// with `base` its most common type (Q3_K, Q4_K or Q5_K).
struct QuantScheme {
  std::string name;  // "q8_0", "q4_k_m", ...
  DType base = DType::kQ8_0;
  QuantMix mix = QuantMix::kNone;
};

// Any DType name except q8_k ("f16", "q4_0", "q6_k", ...) or a mix name
// ("q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m");
// case-insensitive. nullopt for other names.
std::optional<QuantScheme> quant_scheme_from_name(std::string_view name);
// Names quant_scheme_from_name accepts (lower case), for --help.
std::vector<std::string> quant_scheme_names();

// The type `scheme` gives the GGUF tensor `name` (e.g. "blk.3.attn_v.weight")
// in a model of `n_layers` layers, before any fallback. `has_output`: whether
// the model stores output.weight; without it token_embd.weight is the output
// matrix and gets the output's type.
DType quant_scheme_tensor_type(const QuantScheme& scheme, std::string_view name, int n_layers, bool has_output);

// The `note:` line for a matrix whose rows (of `cols` elements) do not fit
// `want`'s block and that is stored as `got` instead.
std::string quant_fallback_note(std::string_view name, int64_t cols, DType want, DType got);

// `t` when `cols` is a multiple of its block size, else the nearest type
// that fits: q2_k/q3_k -> q4_0, q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0,
// and f16 when cols is not a multiple of 32. These are llama.cpp's
// fallbacks except for q2_k/q3_k, which llama.cpp sends to iq4_nl, a type
// tessera does not write: on such rows the two tools' files differ.
DType quant_fallback_type(DType t, int64_t cols);

// llama_ftype for general.file_type: 0 f32, 1 f16, 2 q4_0, 3 q4_1, 7 q8_0,
// 8 q5_0, 9 q5_1, 10 q2_k, 11 q3_k / q3_k_s, 12 q3_k_m, 13 q3_k_l, 14 q4_k /
// q4_k_s, 15 q4_k_m, 16 q5_k / q5_k_s, 17 q5_k_m, 18 q6_k, 32 bf16 (the pure
// K types take the number of their _S mix, the nearest llama.cpp has).
uint32_t quant_scheme_file_type(const QuantScheme& scheme);

// What a requantization wrote, and its progress callback (after each
// tensor: tensors done, tensor count, name): the public tools:: types (tessera/tools.h).
using QuantizeSummary = tools::QuantizeSummary;
using QuantizeProgress = tools::Progress;

// Requantizes `in_path` (a GGUF file with matrices of any type tessera reads,
// or a Hugging Face directory, converted first to a temporary f32 GGUF next
// to `out_path`, `out_path` + ".f32.tmp.gguf", 4 bytes per parameter, whose
// name is removed as soon as it is mapped) to `scheme` and writes
// `out_path`. 2-D tensors are dequantized to f32 and quantized with
// core/quant_ref (K-quants: the least-squares search over 21 trial scales
// documented there); 1-D tensors (norms, biases) are copied unchanged;
// tensors whose row size does not fit the block size fall back per
// quant_fallback_type with a note. Errors name `in_path` (not the
// temporary): those of GgufFile::open and convert_hf_to_gguf, tensors of
// types tessera cannot read (kUnimplemented), Inf/NaN values or values that
// overflow the output's f16 scales (kInvalidArgument, nothing written), I/O
// failures.
// The temporary f32 GGUF quantize_model writes next to `out_path` while it
// converts a Hugging Face directory: `out_path` + ".f32.tmp.gguf".
std::string quantize_temporary_path(const std::string& out_path);

Result<QuantizeSummary> quantize_model(const std::string& in_path, const std::string& out_path,
                                       const QuantScheme& scheme, ThreadPool& pool,
                                       const QuantizeProgress& progress = nullptr);

// What load-time quantization did: the requantized matrices' bytes (one
// buffer per matrix, which must outlive the weights pointing at them) and
// how many matrix views it considered (the output and every layer's seven).
struct QuantizedWeights {
  std::vector<std::vector<uint8_t>> storage;
  int32_t n_considered = 0;
  int32_t n_quantized() const { return static_cast<int32_t>(storage.size()); }
};

// The schemes load-time quantization accepts (`--quantize`,
// EngineOptions::quantize): the types with tile kernels on every SIMD path
// (q8_0, q5_1, q5_0, q4_1, q4_0, q6_k, q5_k, q4_k, q3_k, q2_k) and every mix;
// nullopt for other names (f16, q8_k, unknown; case-insensitive).
std::optional<QuantScheme> load_quant_scheme_from_name(std::string_view name);
// The names load_quant_scheme_from_name accepts (lower case), for --help and errors.
std::vector<std::string> load_quant_scheme_names();

// Load-time quantization: requantizes every matrix view of `weights` except
// token_embd to the type `scheme` gives it (quant_scheme_tensor_type, with
// the layer views named as their GGUF tensors: wq attn_q, wv attn_v, ...;
// the output counts as output.weight even when tied to the embedding).
// Views whose row length does not fit that type's block, or that already
// are that type, are left alone. The views point at the returned buffers.
QuantizedWeights quantize_weights(ModelWeights& weights, const QuantScheme& scheme);

}  // namespace tessera
