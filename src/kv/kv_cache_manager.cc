#include "kv/kv_cache_manager.h"

#include <xxhash.h>

#include <string>

namespace tessera {

KvCacheManager::KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_cache, uint64_t extra_key)
    : block_size_(block_size),
      enabled_(enable_prefix_cache),
      extra_key_(extra_key),
      ref_(static_cast<size_t>(num_blocks), 0),
      hash_(static_cast<size_t>(num_blocks), 0),
      lru_pos_(static_cast<size_t>(num_blocks)),
      in_lru_(static_cast<size_t>(num_blocks), false) {
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

uint64_t KvCacheManager::block_hash(uint64_t parent, const int32_t* tokens) const {
  // XXH3 over the block's token ids, seeded by the parent's hash and the extra
  // key: equal hashes mean equal prefixes (up to 64-bit collisions).
  const uint64_t h = XXH3_64bits_withSeed(tokens, sizeof(int32_t) * static_cast<size_t>(block_size_),
                                          parent * 0x9e3779b97f4a7c15ull ^ extra_key_);
  return h == 0 ? 1 : h;
}

std::optional<int32_t> KvCacheManager::take_block() {
  if (!free_.empty()) {
    const int32_t b = free_.back();
    free_.pop_back();
    ref_[static_cast<size_t>(b)] = 1;
    return b;
  }
  if (lru_.empty()) return std::nullopt;
  const int32_t b = lru_.front();  // evict the least recently used cached block
  lru_.pop_front();
  in_lru_[static_cast<size_t>(b)] = false;
  cached_.erase(hash_[static_cast<size_t>(b)]);
  hash_[static_cast<size_t>(b)] = 0;
  ref_[static_cast<size_t>(b)] = 1;
  ++stats_.evictions;
  return b;
}

int64_t KvCacheManager::match_prefix(const std::vector<int32_t>& tokens, BlockTable& table,
                                     std::vector<uint64_t>& hashes) {
  stats_.query_tokens += static_cast<int64_t>(tokens.size());
  if (!enabled_ || tokens.empty()) return 0;
  const auto full = static_cast<int64_t>(tokens.size() - 1) / block_size_;  // never the last token
  uint64_t parent = 0;
  int64_t matched = 0;
  for (int64_t i = 0; i < full; ++i) {
    const uint64_t h = block_hash(parent, tokens.data() + i * block_size_);
    auto it = cached_.find(h);
    if (it == cached_.end()) break;
    const int32_t b = it->second;
    if (in_lru_[static_cast<size_t>(b)]) {
      lru_.erase(lru_pos_[static_cast<size_t>(b)]);
      in_lru_[static_cast<size_t>(b)] = false;
    }
    ++ref_[static_cast<size_t>(b)];
    table.append(b);
    hashes.push_back(h);
    parent = h;
    ++matched;
  }
  stats_.hit_tokens += matched * block_size_;
  return matched * block_size_;
}

int64_t KvCacheManager::blocks_needed(const BlockTable& table, int64_t n_tokens) const {
  const int64_t want = (n_tokens + block_size_ - 1) / block_size_;
  const auto have = static_cast<int64_t>(table.blocks().size());
  return want > have ? want - have : 0;
}

Status KvCacheManager::allocate(BlockTable& table, int64_t n_tokens) {
  const int64_t need = blocks_needed(table, n_tokens);
  if (need > num_available()) {
    return resource_exhausted("KV cache full: " + std::to_string(need) + " blocks needed, " +
                              std::to_string(num_available()) + " available");
  }
  for (int64_t i = 0; i < need; ++i) table.append(*take_block());
  return {};
}

void KvCacheManager::cache_full_blocks(const std::vector<int32_t>& tokens, int64_t n_computed, const BlockTable& table,
                                       std::vector<uint64_t>& hashes) {
  if (!enabled_) return;
  const int64_t full = n_computed / block_size_;
  for (auto i = static_cast<int64_t>(hashes.size()); i < full; ++i) {
    const uint64_t parent = i == 0 ? 0 : hashes[static_cast<size_t>(i - 1)];
    const uint64_t h = block_hash(parent, tokens.data() + i * block_size_);
    hashes.push_back(h);
    const int32_t b = table.blocks()[static_cast<size_t>(i)];
    if (hash_[static_cast<size_t>(b)] != 0) continue;  // already cached (shared from a match)
    if (cached_.emplace(h, b).second) hash_[static_cast<size_t>(b)] = h;
  }
}

void KvCacheManager::release(BlockTable& table) {
  release_blocks(table.take_blocks());
}

void KvCacheManager::truncate(BlockTable& table, int64_t n_tokens) {
  release_blocks(table.take_blocks_from(static_cast<size_t>((n_tokens + block_size_ - 1) / block_size_)));
}

void KvCacheManager::release_blocks(const std::vector<int32_t>& blocks) {
  // Release the tail first so that, among one sequence's blocks, deeper
  // blocks are evicted before the prefix blocks they depend on.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    const int32_t b = *it;
    int32_t& rc = ref_[static_cast<size_t>(b)];
    if (--rc > 0) continue;
    if (hash_[static_cast<size_t>(b)] != 0) {
      lru_pos_[static_cast<size_t>(b)] = lru_.insert(lru_.end(), b);
      in_lru_[static_cast<size_t>(b)] = true;
    } else {
      free_.push_back(b);
    }
  }
}

bool KvCacheManager::check_invariants() const {
  std::vector<int> seen(ref_.size(), 0);
  for (int32_t b : free_) {
    if (ref_[static_cast<size_t>(b)] != 0 || hash_[static_cast<size_t>(b)] != 0) return false;
    ++seen[static_cast<size_t>(b)];
  }
  for (int32_t b : lru_) {
    if (ref_[static_cast<size_t>(b)] != 0 || hash_[static_cast<size_t>(b)] == 0 || !in_lru_[static_cast<size_t>(b)])
      return false;
    ++seen[static_cast<size_t>(b)];
  }
  for (size_t b = 0; b < ref_.size(); ++b) {
    if (ref_[b] < 0) return false;
    if (ref_[b] > 0) ++seen[b];
    if (seen[b] != 1) return false;
    if (hash_[b] != 0) {
      auto it = cached_.find(hash_[b]);
      if (it == cached_.end() || it->second != static_cast<int32_t>(b)) return false;
    }
  }
  return cached_.size() <= ref_.size();
}

}  // namespace tessera
