// KvBuffer: the CPU memory of a paged KV cache (layout from kv/kv_cache_spec.h).
// Per layer, K and V are each [num_blocks * block_size, n_kv_heads, head_dim]
// of spec.dtype (f16 by default; bf16, f32, and int8 / fp8 where each head's
// row is followed by its f32 scale), indexed by slot
// (block * block_size + offset); a block's rows are contiguous so attention
// streams one block at a time.
#pragma once

#include <cstdint>
#include <memory>

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
  // Row of slot `slot` in layer `layer`: n_kv_heads head rows of
  // kv_head_bytes(spec().dtype, head_dim) bytes each.
  void* k(int layer, int64_t slot) { return k_.data() + offset(layer, slot); }
  void* v(int layer, int64_t slot) { return v_.data() + offset(layer, slot); }
  const void* k(int layer, int64_t slot) const { return k_.data() + offset(layer, slot); }
  const void* v(int layer, int64_t slot) const { return v_.data() + offset(layer, slot); }

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
  int64_t row_elems_ = 0;  // n_kv_heads * head_dim
  int64_t row_bytes_ = 0;  // row_elems_ * element size
  // Huge-page memory: decode at 4k context walks a page per KV block and
  // layer otherwise (0.78x the tokens/s, docs/quantization.md).
  HugePageMemory k_;  // [n_layers, slots, n_kv_heads, head_dim]
  HugePageMemory v_;  // [n_layers, slots, n_kv_heads, head_dim]
};

}  // namespace tessera::cpu
