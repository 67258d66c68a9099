#include "kv/kv_cache_spec.h"

#include <string>

#include "core/byte_size.h"

namespace tessera {

Status size_kv_cache(KvCacheSpec& spec, uint64_t memory_bytes, int64_t ctx_tokens) {
  const uint64_t block_bytes = spec.bytes_per_token() * static_cast<uint64_t>(spec.block_size);
  if (block_bytes == 0) return invalid_argument("KV cache has zero bytes per token");
  if (memory_bytes > 0) {
    const uint64_t blocks = memory_bytes / block_bytes;
    if (blocks == 0) {
      return invalid_argument("--kv-cache-memory " + format_byte_size(memory_bytes) +
                              " is smaller than one KV block (" + format_byte_size(block_bytes) + ")");
    }
    if (blocks > (1u << 30)) return invalid_argument("--kv-cache-memory is too large");
    spec.num_blocks = static_cast<int32_t>(blocks);
    return {};
  }
  if (ctx_tokens <= 0) return invalid_argument("--ctx-size must be positive");
  if (ctx_tokens > (int64_t{1} << 30)) return invalid_argument("--ctx-size is too large");
  spec.num_blocks = static_cast<int32_t>((ctx_tokens + spec.block_size - 1) / spec.block_size);
  return {};
}

}  // namespace tessera
