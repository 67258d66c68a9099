// BlockTable: the KV blocks one sequence owns, in position order. Token at
// position p lives in block blocks()[p / block_size] at offset p % block_size;
// its slot (the row index in the KV buffer) is block * block_size + offset.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kv/block_pool.h"
#include "tessera/status.h"

namespace tessera {

class BlockTable {
 public:
  explicit BlockTable(int32_t block_size) : block_size_(block_size) {}

  int32_t block_size() const { return block_size_; }
  const std::vector<int32_t>& blocks() const { return blocks_; }
  // Tokens the current blocks can hold.
  int64_t capacity() const { return static_cast<int64_t>(blocks_.size()) * block_size_; }

  // Allocates blocks from `pool` until n_tokens fit. On failure no block is
  // kept from this call and kResourceExhausted is returned.
  Status reserve(int64_t n_tokens, BlockPool& pool);
  // The slot of position `pos` (< capacity()).
  int64_t slot(int64_t pos) const {
    return static_cast<int64_t>(blocks_[static_cast<size_t>(pos / block_size_)]) * block_size_ + pos % block_size_;
  }
  // A table for a sequence that continues from this one's first n_tokens
  // tokens: full blocks are shared (their reference counts grow); a partly
  // filled last block is replaced by a fresh one, returned in *copy_from /
  // *copy_to so the caller copies its K/V (copy-on-write at fork time).
  // *copy_from is -1 when nothing needs copying. kResourceExhausted when no
  // block is free.
  Result<BlockTable> fork(int64_t n_tokens, BlockPool& pool, int32_t* copy_from, int32_t* copy_to) const;
  // Appends an already-referenced block (the KV cache manager's use).
  void append(int32_t block) { blocks_.push_back(block); }
  // Removes and returns every block id, leaving the table empty.
  std::vector<int32_t> take_blocks() { return std::exchange(blocks_, {}); }
  // Removes and returns the blocks from index `keep` on (the table keeps `keep` blocks).
  std::vector<int32_t> take_blocks_from(size_t keep) {
    if (keep >= blocks_.size()) return {};
    std::vector<int32_t> tail(blocks_.begin() + static_cast<std::ptrdiff_t>(keep), blocks_.end());
    blocks_.resize(keep);
    return tail;
  }
  // Returns every block to `pool`.
  void release_all(BlockPool& pool);

 private:
  int32_t block_size_;
  std::vector<int32_t> blocks_;
};

}  // namespace tessera
