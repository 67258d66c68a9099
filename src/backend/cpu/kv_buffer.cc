#include "backend/cpu/kv_buffer.h"

#include <new>

namespace tessera::cpu {

Result<std::unique_ptr<KvBuffer>> KvBuffer::create(const KvCacheSpec& spec) {
  if (spec.dtype != DType::kF16) {
    return unimplemented(std::string("KV cache dtype ") + dtype_name(spec.dtype) + " (only f16 so far)");
  }
  std::unique_ptr<KvBuffer> buf(new KvBuffer(spec));
  buf->row_elems_ = static_cast<int64_t>(spec.n_kv_heads) * spec.head_dim;
  const auto n = static_cast<size_t>(spec.n_layers * spec.capacity_tokens() * buf->row_elems_);
  buf->k_.reset(new (std::nothrow) uint16_t[n]);
  buf->v_.reset(new (std::nothrow) uint16_t[n]);
  if (!buf->k_ || !buf->v_) return resource_exhausted("cannot allocate the KV cache");
  return buf;
}

}  // namespace tessera::cpu
