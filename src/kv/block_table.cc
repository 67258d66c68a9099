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

Result<BlockTable> BlockTable::fork(int64_t n_tokens, BlockPool& pool, int32_t* copy_from, int32_t* copy_to) const {
  BlockTable child(block_size_);
  const int64_t full = n_tokens / block_size_;
  *copy_from = -1;
  *copy_to = -1;
  if (n_tokens % block_size_ != 0) {
    auto fresh = pool.allocate();
    if (!fresh) return resource_exhausted("KV cache full: no block free to fork a sequence");
    *copy_from = blocks_[static_cast<size_t>(full)];
    *copy_to = *fresh;
  }
  for (int64_t i = 0; i < full; ++i) {
    pool.retain(blocks_[static_cast<size_t>(i)]);
    child.blocks_.push_back(blocks_[static_cast<size_t>(i)]);
  }
  if (*copy_to >= 0) child.blocks_.push_back(*copy_to);
  return child;
}

void BlockTable::release_all(BlockPool& pool) {
  for (int32_t b : blocks_) pool.release(b);
  blocks_.clear();
}

}  // namespace tessera
