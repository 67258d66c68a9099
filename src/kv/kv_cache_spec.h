// The shape of a paged KV cache and its memory arithmetic. Bytes per token =
// 2 (K and V) x n_layers x n_kv_heads x head_dim x bytes per element
// (plus one f32 scale per head and token for int8 and fp8).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"
#include "tessera/status.h"

namespace tessera {

inline constexpr int32_t kDefaultKvBlockSize = 16;

// Element type of the cached keys and values. kInt8 stores each head's row as
// int8 with one f32 scale (symmetric, scale = max|x| / 127) per token and
// head; attention reads it directly. kFp8 stores FP8 E4M3 (core/fp8.h) with
// one f32 scale per token and head (scale = max|x| / 448, so each head's row
// uses the whole E4M3 range).
enum class KvDtype { kF16, kBF16, kF32, kInt8, kFp8 };

const char* kv_dtype_name(KvDtype t);  // "f16", "bf16", "f32", "int8", "fp8"
std::optional<KvDtype> kv_dtype_from_name(std::string_view name);
// `--kv-cache-dtype auto` (vLLM's rule): the weights' own float type for
// F32, F16 and BF16 matrices, f16 for quantized ones. `weights` is the type
// of the model's main matrices (the first layer's Q projection).
KvDtype auto_kv_dtype(DType weights);
// Bytes of one head's row of head_dim elements (int8, fp8: plus its f32 scale).
uint64_t kv_head_bytes(KvDtype t, int32_t head_dim);

struct KvCacheSpec {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  KvDtype dtype = KvDtype::kF16;
  int32_t block_size = kDefaultKvBlockSize;  // tokens per block
  int32_t num_blocks = 0;

  uint64_t bytes_per_token() const {
    return 2ull * static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(n_kv_heads) * kv_head_bytes(dtype, head_dim);
  }
  int64_t capacity_tokens() const { return static_cast<int64_t>(num_blocks) * block_size; }
  uint64_t total_bytes() const { return bytes_per_token() * static_cast<uint64_t>(capacity_tokens()); }
};

// Sets spec.num_blocks from a memory budget in bytes (rounded down to whole
// blocks) or, when memory_bytes is 0, from a context size in tokens (rounded
// up). Errors: a budget smaller than one block, or a zero/negative size.
Status size_kv_cache(KvCacheSpec& spec, uint64_t memory_bytes, int64_t ctx_tokens);

}  // namespace tessera
