// BlockPool: the free list and reference counts of the KV cache's fixed-size
// blocks (PagedAttention, Kwon et al. 2023, arXiv:2309.06180). Pure host
// logic: it hands out block ids; the memory lives in the backend's KV buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tessera {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }

  // A free block with reference count 1, or nullopt when none is left.
  std::optional<int32_t> allocate();
  // Adds a reference to an allocated block (sharing it between sequences).
  void retain(int32_t block);
  // Drops a reference; the block returns to the free list at zero.
  void release(int32_t block);
  int32_t ref_count(int32_t block) const { return ref_counts_[static_cast<size_t>(block)]; }

 private:
  std::vector<int32_t> ref_counts_;  // [num_blocks]
  std::vector<int32_t> free_;        // stack of free block ids, lowest id on top
};

}  // namespace tessera
