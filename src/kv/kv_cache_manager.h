// KvCacheManager: hands out KV blocks to sequences and keeps full blocks in an
// automatic prefix cache (vLLM's automatic prefix caching; SGLang RadixAttention
// is the tree-shaped variant). Every full block is identified by a hash of its
// parent block's hash, its token ids and an extra key (model, KV dtype), so a
// block's hash names its whole prefix. Full blocks stay cached after their
// sequence ends, with reference counts; unreferenced cached blocks are evicted
// least-recently-used first, only when a block is needed. Pure host logic.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/block_table.h"
#include "tessera/status.h"

namespace tessera {

struct PrefixCacheStats {
  // Every lookup (match_prefix call), repeats included; the engine's metrics
  // count each prompt once per admission instead (Scheduler::prefix_query_tokens).
  int64_t query_tokens = 0;  // tokens looked up
  int64_t hit_tokens = 0;    // of those, found in the cache
  int64_t evictions = 0;     // cached blocks reused for new data
};

class KvCacheManager {
 public:
  // `extra_key` folds everything else that changes a block's contents (model,
  // KV dtype) into its hash.
  KvCacheManager(int32_t num_blocks, int32_t block_size, bool enable_prefix_cache, uint64_t extra_key = 0);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return static_cast<int32_t>(ref_.size()); }
  // Blocks that can be handed out now: free plus evictable cached ones.
  int32_t num_available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t num_used() const { return num_blocks() - num_available(); }
  bool prefix_cache_enabled() const { return enabled_; }
  const PrefixCacheStats& stats() const { return stats_; }

  // Looks up the longest run of cached full blocks that prefixes `tokens`,
  // never covering the last token (it must be computed to have logits).
  // Appends those blocks to `table` (taking references) and returns the number
  // of cached tokens. `table` must be empty. Counts a query of tokens.size().
  // `hashes` receives the matched blocks' hashes (the chain continues from them).
  int64_t match_prefix(const std::vector<int32_t>& tokens, BlockTable& table, std::vector<uint64_t>& hashes);

  // Blocks `table` needs to hold n_tokens.
  int64_t blocks_needed(const BlockTable& table, int64_t n_tokens) const;
  // Grows `table` to hold n_tokens, evicting LRU cached blocks if needed.
  // kResourceExhausted (and no change) when not enough blocks are available.
  Status allocate(BlockTable& table, int64_t n_tokens);

  // Registers the full blocks among the first n_computed tokens of `tokens`
  // (the sequence's tokens) in the prefix cache. `hashes` holds the hashes of
  // the sequence's blocks registered so far and is extended. A block whose
  // content is already cached elsewhere stays private to the sequence.
  void cache_full_blocks(const std::vector<int32_t>& tokens, int64_t n_computed, const BlockTable& table,
                         std::vector<uint64_t>& hashes);

  // Drops the table's references. Blocks with a hash stay cached (most
  // recently used last); others return to the free list. `table` is cleared.
  void release(BlockTable& table);
  // Rolls `table` back to the blocks that hold its first n_tokens tokens
  // (speculative decoding: rejected positions), releasing the rest as release() does.
  void truncate(BlockTable& table, int64_t n_tokens);

  int32_t ref_count(int32_t block) const { return ref_[static_cast<size_t>(block)]; }
  // Checks internal consistency (every block exactly once free, cached-evictable
  // or referenced). For tests.
  bool check_invariants() const;

 private:
  std::optional<int32_t> take_block();
  void release_blocks(const std::vector<int32_t>& blocks);  // the tail is released first
  uint64_t block_hash(uint64_t parent, const int32_t* tokens) const;

  int32_t block_size_;
  bool enabled_;
  uint64_t extra_key_;
  std::vector<int32_t> ref_;                           // [num_blocks] references from block tables
  std::vector<uint64_t> hash_;                         // [num_blocks] 0: no hash (not a cached full block)
  std::vector<int32_t> free_;                          // blocks with no hash and no reference
  std::list<int32_t> lru_;                             // unreferenced cached blocks, least recently used first
  std::vector<std::list<int32_t>::iterator> lru_pos_;  // [num_blocks] valid when in lru_
  std::vector<bool> in_lru_;                           // [num_blocks]
  std::unordered_map<uint64_t, int32_t> cached_;       // hash -> block
  PrefixCacheStats stats_;
};

}  // namespace tessera
