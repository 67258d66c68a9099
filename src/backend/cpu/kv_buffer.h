// KvBuffer: the CPU memory of a paged KV cache (layout from kv/kv_cache_spec.h).
// Per layer, V is [num_blocks * block_size, n_kv_heads, head_dim] of
// spec.dtype (f16 by default; bf16, f32, and int8 / fp8 where each head's
// row is followed by its f32 scale), indexed by slot
// (block * block_size + offset), and so is K for f32. K of every other
// dtype is transposed within each block, one chunk per KV head:
//   16-bit (f16, bf16): [num_blocks, n_kv_heads, head_dim, block_size]
//   8-bit (int8, fp8):  [num_blocks, n_kv_heads, (head_dim, block_size)
//                        values, then block_size f32 scales]
// so that element d of a block's keys is one vector (keys_in_lanes(): the
// scores take one FMA per element for 16 keys, kernels.h attn_qk_*_kt).
// Either way a block's bytes are contiguous (block_size rows' worth), so
// attention streams one block at a time and copy_block copies bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/huge_page_memory.h"
#include "backend/cpu/kernels.h"
#include "kv/kv_cache_spec.h"
#include "tessera/status.h"

namespace tessera::cpu {

class KvBuffer final : public KvCache {
 public:
  // Allocates spec.total_bytes(). Errors: allocation failure (kResourceExhausted).
  static Result<std::unique_ptr<KvBuffer>> create(const KvCacheSpec& spec);

  const KvCacheSpec& spec() const override { return spec_; }
  // Whether K is stored transposed within blocks (every dtype but f32).
  bool keys_in_lanes() const { return spec_.dtype != KvDtype::kF32; }
  // Row of slot `slot` in layer `layer`: n_kv_heads head rows of
  // kv_head_bytes(spec().dtype, head_dim) bytes each. For K only without
  // keys_in_lanes() (with it, k(layer, slot) is where the slot's block
  // starts when slot is a block's first).
  void* k(int layer, int64_t slot) { return k_.data() + offset(layer, slot); }
  void* v(int layer, int64_t slot) { return v_.data() + offset(layer, slot); }
  const void* k(int layer, int64_t slot) const { return k_.data() + offset(layer, slot); }
  const void* v(int layer, int64_t slot) const { return v_.data() + offset(layer, slot); }
  // With keys_in_lanes(): block `block`'s keys of KV head `head` in layer
  // `layer`: block_size * kv_head_bytes(dtype, head_dim) bytes, laid out as
  // above.
  const uint8_t* k_block(int layer, int64_t block, int32_t head) const {
    return k_.data() + offset(layer, block * spec_.block_size) +
           static_cast<int64_t>(head) * spec_.block_size *
               static_cast<int64_t>(kv_head_bytes(spec_.dtype, spec_.head_dim));
  }

  // Converts k[n_kv_heads * head_dim] and v[...] (f32) into slot `slot`.
  void store(const Kernels& kernels, int layer, int64_t slot, const float* k, const float* v);
  // Converts slot `slot` back to f32 k[n_kv_heads * head_dim] and v[...]
  // (what attention sees). For tests and tools.
  void load(int layer, int64_t slot, float* k, float* v) const;
  // Copies block `src`'s K and V rows of every layer into block `dst`.
  void copy_block(int32_t src, int32_t dst);

 private:
  explicit KvBuffer(const KvCacheSpec& spec) : spec_(spec) {}
  // Byte offset of a row.
  int64_t offset(int layer, int64_t slot) const {
    return (static_cast<int64_t>(layer) * spec_.capacity_tokens() + slot) * row_bytes_;
  }

  KvCacheSpec spec_;
  int64_t row_bytes_ = 0;     // n_kv_heads * kv_head_bytes(dtype, head_dim)
  std::vector<uint8_t> row_;  // store: one K row as rows store it [row_bytes_]
  // Huge-page memory: decode at 4k context walks a page per KV block and
  // layer otherwise (0.78x the tokens/s, docs/quantization.md).
  HugePageMemory k_;  // [n_layers, slots, n_kv_heads, head_dim]
  HugePageMemory v_;  // [n_layers, slots, n_kv_heads, head_dim]
};

}  // namespace tessera::cpu
