#include "backend/cpu/kv_buffer.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "core/quant_ref.h"

namespace tessera::cpu {

Result<std::unique_ptr<KvBuffer>> KvBuffer::create(const KvCacheSpec& spec) {
  if (spec.dtype != DType::kF16 && spec.dtype != DType::kF32 && spec.dtype != DType::kBF16) {
    return unimplemented(std::string("KV cache dtype ") + dtype_name(spec.dtype) + " (supported: f16, bf16, f32)");
  }
  std::unique_ptr<KvBuffer> buf(new KvBuffer(spec));
  buf->row_elems_ = static_cast<int64_t>(spec.n_kv_heads) * spec.head_dim;
  buf->row_bytes_ = buf->row_elems_ * static_cast<int64_t>(dtype_block_bytes(spec.dtype));
  const auto n = static_cast<size_t>(spec.n_layers * spec.capacity_tokens() * buf->row_bytes_);
  buf->k_.reset(new (std::nothrow) uint8_t[n]);
  buf->v_.reset(new (std::nothrow) uint8_t[n]);
  if (!buf->k_ || !buf->v_) return resource_exhausted("cannot allocate the KV cache");
  return buf;
}

void KvBuffer::store(const Kernels& kernels, int layer, int64_t slot, const float* k, const float* v) {
  switch (spec_.dtype) {
    case DType::kF16:
      kernels.f32_to_f16_row(k, static_cast<uint16_t*>(this->k(layer, slot)), row_elems_);
      kernels.f32_to_f16_row(v, static_cast<uint16_t*>(this->v(layer, slot)), row_elems_);
      return;
    case DType::kF32:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ8_K:
      quantize_row(spec_.dtype, k, this->k(layer, slot), row_elems_);
      quantize_row(spec_.dtype, v, this->v(layer, slot), row_elems_);
      return;
  }
}

void KvBuffer::copy_block(int32_t src, int32_t dst) {
  const int64_t bs = spec_.block_size;
  const auto n = static_cast<size_t>(bs * row_bytes_);
  for (int layer = 0; layer < spec_.n_layers; ++layer) {
    std::memcpy(k(layer, dst * bs), k(layer, src * bs), n);
    std::memcpy(v(layer, dst * bs), v(layer, src * bs), n);
  }
}

}  // namespace tessera::cpu
