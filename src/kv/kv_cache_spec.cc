#include "kv/kv_cache_spec.h"

#include <string>

#include "tessera/byte_size.h"

namespace tessera {

const char* kv_dtype_name(KvDtype t) {
  switch (t) {
    case KvDtype::kF16:
      return "f16";
    case KvDtype::kBF16:
      return "bf16";
    case KvDtype::kF32:
      return "f32";
    case KvDtype::kInt8:
      return "int8";
    case KvDtype::kFp8:
      return "fp8";
  }
  return "?";
}

std::optional<KvDtype> kv_dtype_from_name(std::string_view name) {
  for (KvDtype t : {KvDtype::kF16, KvDtype::kBF16, KvDtype::kF32, KvDtype::kInt8, KvDtype::kFp8}) {
    if (name == kv_dtype_name(t)) return t;
  }
  return std::nullopt;
}

KvDtype auto_kv_dtype(DType weights) {
  switch (weights) {
    case DType::kF32:
      return KvDtype::kF32;
    case DType::kBF16:
      return KvDtype::kBF16;
    default:
      return KvDtype::kF16;
  }
}

uint64_t kv_head_bytes(KvDtype t, int32_t head_dim) {
  const auto hd = static_cast<uint64_t>(head_dim);
  switch (t) {
    case KvDtype::kF16:
    case KvDtype::kBF16:
      return 2 * hd;
    case KvDtype::kF32:
      return 4 * hd;
    case KvDtype::kInt8:
    case KvDtype::kFp8:
      return hd + sizeof(float);
  }
  return 0;
}

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
