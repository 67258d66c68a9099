// The shape of a paged KV cache and its memory arithmetic. Bytes per token =
// 2 (K and V) x n_layers x n_kv_heads x head_dim x bytes per element.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "tessera/status.h"

namespace tessera {

inline constexpr int32_t kDefaultKvBlockSize = 16;

struct KvCacheSpec {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  DType dtype = DType::kF16;  // element type of K and V (f16 or f32)
  int32_t block_size = kDefaultKvBlockSize;  // tokens per block
  int32_t num_blocks = 0;

  uint64_t bytes_per_token() const {
    return 2ull * static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(n_kv_heads) *
           static_cast<uint64_t>(head_dim) * dtype_block_bytes(dtype);
  }
  int64_t capacity_tokens() const { return static_cast<int64_t>(num_blocks) * block_size; }
  uint64_t total_bytes() const { return bytes_per_token() * static_cast<uint64_t>(capacity_tokens()); }
};

// Sets spec.num_blocks from a memory budget in bytes (rounded down to whole
// blocks) or, when memory_bytes is 0, from a context size in tokens (rounded
// up). Errors: a budget smaller than one block, or a zero/negative size.
Status size_kv_cache(KvCacheSpec& spec, uint64_t memory_bytes, int64_t ctx_tokens);

}  // namespace tessera
