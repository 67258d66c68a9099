// KvBuffer: the CPU memory of a paged KV cache (layout from kv/kv_cache_spec.h).
// Per layer, K and V are each [num_blocks * block_size, n_kv_heads, head_dim]
// in f16, indexed by slot (block * block_size + offset); a block's rows are
// contiguous so attention streams one block at a time.
#pragma once

#include <cstdint>
#include <memory>

#include "kv/kv_cache_spec.h"
#include "tessera/status.h"

namespace tessera::cpu {

class KvBuffer {
 public:
  // Allocates spec.total_bytes(). Errors: a dtype other than f16
  // (kUnimplemented), allocation failure (kResourceExhausted).
  static Result<std::unique_ptr<KvBuffer>> create(const KvCacheSpec& spec);

  const KvCacheSpec& spec() const { return spec_; }
  // Row of slot `slot` in layer `layer`: [n_kv_heads, head_dim].
  uint16_t* k(int layer, int64_t slot) { return k_.get() + offset(layer, slot); }
  uint16_t* v(int layer, int64_t slot) { return v_.get() + offset(layer, slot); }
  const uint16_t* k(int layer, int64_t slot) const { return k_.get() + offset(layer, slot); }
  const uint16_t* v(int layer, int64_t slot) const { return v_.get() + offset(layer, slot); }

 private:
  explicit KvBuffer(const KvCacheSpec& spec) : spec_(spec) {}
  int64_t offset(int layer, int64_t slot) const {
    return (static_cast<int64_t>(layer) * spec_.capacity_tokens() + slot) * row_elems_;
  }

  KvCacheSpec spec_;
  int64_t row_elems_ = 0;              // n_kv_heads * head_dim
  std::unique_ptr<uint16_t[]> k_;      // [n_layers, slots, n_kv_heads, head_dim]
  std::unique_ptr<uint16_t[]> v_;      // [n_layers, slots, n_kv_heads, head_dim]
};

}  // namespace tessera::cpu
