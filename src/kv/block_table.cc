#include "kv/block_table.h"

#include <string>

namespace tessera {

Status BlockTable::reserve(int64_t n_tokens, BlockPool& pool) {
  const size_t before = blocks_.size();
  while (capacity() < n_tokens) {
    auto b = pool.allocate();
    if (!b) {
      while (blocks_.size() > before) {
        pool.release(blocks_.back());
        blocks_.pop_back();
      }
      return resource_exhausted("KV cache full: " + std::to_string(n_tokens) + " tokens need " +
                                std::to_string((n_tokens + block_size_ - 1) / block_size_) + " blocks, " +
                                std::to_string(pool.num_free() + static_cast<int32_t>(before)) +
                                " available");
    }
    blocks_.push_back(*b);
  }
  return {};
}

void BlockTable::release_all(BlockPool& pool) {
  for (int32_t b : blocks_) pool.release(b);
  blocks_.clear();
}

}  // namespace tessera
