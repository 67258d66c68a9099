#include "backend/cpu/kv_buffer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/fp8.h"
#include "core/quant_ref.h"

namespace tessera::cpu {

Result<std::unique_ptr<KvBuffer>> KvBuffer::create(const KvCacheSpec& spec) {
  std::unique_ptr<KvBuffer> buf(new KvBuffer(spec));
  buf->row_bytes_ =
      static_cast<int64_t>(spec.n_kv_heads) * static_cast<int64_t>(kv_head_bytes(spec.dtype, spec.head_dim));
  buf->row_.resize(static_cast<size_t>(buf->row_bytes_));
  const auto n = static_cast<size_t>(spec.n_layers * spec.capacity_tokens() * buf->row_bytes_);
  auto k = HugePageMemory::allocate(n);
  auto v = HugePageMemory::allocate(n);
  if (!k.ok() || !v.ok()) return resource_exhausted("cannot allocate the KV cache");
  buf->k_ = std::move(k).value();
  buf->v_ = std::move(v).value();
  return buf;
}

namespace {

// One head's row: int8 values then the f32 scale (symmetric, max|x| / 127).
void store_int8_head(const float* x, uint8_t* dst, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / 127.0f;
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  auto* q = reinterpret_cast<int8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<int8_t>(std::lround(x[i] * inv));
  std::memcpy(dst + n, &scale, sizeof(scale));
}

// One head's row: E4M3 values of x / scale then the f32 scale (max|x| / 448).
void store_fp8_head(const float* x, uint8_t* dst, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / kFp8E4M3Max;
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_fp8_e4m3(x[i] * inv);
  std::memcpy(dst + n, &scale, sizeof(scale));
}

void store_row(const Kernels& kernels, const KvCacheSpec& spec, const float* x, void* dst) {
  const int64_t n = static_cast<int64_t>(spec.n_kv_heads) * spec.head_dim;
  switch (spec.dtype) {
    case KvDtype::kF16:
      kernels.f32_to_f16_row(x, static_cast<uint16_t*>(dst), n);
      return;
    case KvDtype::kBF16:
      quantize_row(DType::kBF16, x, dst, n);
      return;
    case KvDtype::kF32:
      std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
      return;
    case KvDtype::kInt8:
    case KvDtype::kFp8: {
      const uint64_t head_bytes = kv_head_bytes(spec.dtype, spec.head_dim);
      auto* store_head = spec.dtype == KvDtype::kInt8 ? store_int8_head : store_fp8_head;
      for (int32_t h = 0; h < spec.n_kv_heads; ++h) {
        store_head(x + static_cast<int64_t>(h) * spec.head_dim, static_cast<uint8_t*>(dst) + h * head_bytes,
                   spec.head_dim);
      }
      return;
    }
  }
}

void load_row(const KvCacheSpec& spec, const void* src, float* x) {
  const int64_t n = static_cast<int64_t>(spec.n_kv_heads) * spec.head_dim;
  switch (spec.dtype) {
    case KvDtype::kF16:
      dequantize_row(DType::kF16, src, x, n);
      return;
    case KvDtype::kBF16:
      dequantize_row(DType::kBF16, src, x, n);
      return;
    case KvDtype::kF32:
      std::memcpy(x, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case KvDtype::kInt8:
    case KvDtype::kFp8: {
      const uint64_t head_bytes = kv_head_bytes(spec.dtype, spec.head_dim);
      const float* fp8 = fp8_e4m3_table();
      for (int32_t h = 0; h < spec.n_kv_heads; ++h) {
        const auto* head = static_cast<const uint8_t*>(src) + h * head_bytes;
        float scale;
        std::memcpy(&scale, head + spec.head_dim, sizeof(scale));
        for (int32_t i = 0; i < spec.head_dim; ++i) {
          const float q = spec.dtype == KvDtype::kInt8 ? static_cast<float>(reinterpret_cast<const int8_t*>(head)[i])
                                                       : fp8[head[i]];
          x[h * spec.head_dim + i] = scale * q;
        }
      }
      return;
    }
  }
}

}  // namespace

namespace {

// Byte offset, within a block's K, of head h's element d of the key in lane
// o (kv_buffer.h), and of that key's scale (8-bit); `elem` bytes per element,
// `head` bytes per head in a row (kv_head_bytes).
struct KeyLanes {
  int64_t bs, hd, elem, head;
  int64_t value(int64_t h, int64_t d, int64_t o) const { return h * bs * head + (d * bs + o) * elem; }
  int64_t scale(int64_t h, int64_t o) const {
    return h * bs * head + hd * bs + o * static_cast<int64_t>(sizeof(float));
  }
};

KeyLanes key_lanes(const KvCacheSpec& spec) {
  const int64_t elem = spec.dtype == KvDtype::kInt8 || spec.dtype == KvDtype::kFp8 ? 1 : 2;  // not f32
  return {spec.block_size, spec.head_dim, elem, static_cast<int64_t>(kv_head_bytes(spec.dtype, spec.head_dim))};
}

}  // namespace

void KvBuffer::store(const Kernels& kernels, int layer, int64_t slot, const float* k, const float* v) {
  store_row(kernels, spec_, v, this->v(layer, slot));
  if (!keys_in_lanes()) {
    store_row(kernels, spec_, k, this->k(layer, slot));
    return;
  }
  // The row as rows store it, then element (head, d) to lane slot % bs of
  // the head's [head_dim, bs] keys in the block (and an 8-bit row's scale to
  // the head's [bs] scales).
  store_row(kernels, spec_, k, row_.data());
  const KeyLanes kl = key_lanes(spec_);
  const int64_t o = slot % kl.bs;
  auto* block = static_cast<uint8_t*>(this->k(layer, slot / kl.bs * kl.bs));
  for (int64_t h = 0; h < spec_.n_kv_heads; ++h) {
    const uint8_t* src = row_.data() + h * kl.head;
    for (int64_t d = 0; d < kl.hd; ++d) {
      std::memcpy(block + kl.value(h, d, o), src + d * kl.elem, static_cast<size_t>(kl.elem));
    }
    if (kl.elem == 1) std::memcpy(block + kl.scale(h, o), src + kl.hd, sizeof(float));
  }
}

void KvBuffer::load(int layer, int64_t slot, float* k, float* v) const {
  load_row(spec_, this->v(layer, slot), v);
  if (!keys_in_lanes()) {
    load_row(spec_, this->k(layer, slot), k);
    return;
  }
  const KeyLanes kl = key_lanes(spec_);
  const int64_t o = slot % kl.bs;
  const auto* block = static_cast<const uint8_t*>(this->k(layer, slot / kl.bs * kl.bs));
  std::vector<uint8_t> row(static_cast<size_t>(row_bytes_));
  for (int64_t h = 0; h < spec_.n_kv_heads; ++h) {
    uint8_t* dst = row.data() + h * kl.head;
    for (int64_t d = 0; d < kl.hd; ++d) {
      std::memcpy(dst + d * kl.elem, block + kl.value(h, d, o), static_cast<size_t>(kl.elem));
    }
    if (kl.elem == 1) std::memcpy(dst + kl.hd, block + kl.scale(h, o), sizeof(float));
  }
  load_row(spec_, row.data(), k);
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
