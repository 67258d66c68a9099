#include "kv/block_pool.h"

#include "core/check.h"

namespace tessera {

BlockPool::BlockPool(int32_t num_blocks) : ref_counts_(static_cast<size_t>(num_blocks), 0) {
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> BlockPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t b = free_.back();
  free_.pop_back();
  ref_counts_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::retain(int32_t block) {
  TESSERA_CHECK(ref_counts_.at(static_cast<size_t>(block)) > 0);
  ++ref_counts_[static_cast<size_t>(block)];
}

void BlockPool::release(int32_t block) {
  int32_t& rc = ref_counts_.at(static_cast<size_t>(block));
  TESSERA_CHECK(rc > 0);
  if (--rc == 0) free_.push_back(block);
}

}  // namespace tessera
