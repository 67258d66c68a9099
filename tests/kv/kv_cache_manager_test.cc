#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tessera {
namespace {

std::vector<int32_t> seq(int n, int offset = 0) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), offset);
  return t;
}

// Allocates blocks for all of `tokens`, marks them computed and releases them.
void run_and_release(KvCacheManager& kv, const std::vector<int32_t>& tokens) {
  BlockTable t(kv.block_size());
  std::vector<uint64_t> hashes;
  ASSERT_TRUE(kv.allocate(t, static_cast<int64_t>(tokens.size())).ok());
  kv.cache_full_blocks(tokens, static_cast<int64_t>(tokens.size()), t, hashes);
  kv.release(t);
}

TEST(KvCacheManager, ReusesTheLongestCachedPrefixButNeverTheLastToken) {
  KvCacheManager kv(16, 4, true);
  run_and_release(kv, seq(10));  // blocks [0..3], [4..7] full; [8, 9] partial
  EXPECT_EQ(kv.num_used(), 0);
  BlockTable t(4);
  std::vector<uint64_t> h;
  auto same_prefix = seq(10);
  same_prefix.push_back(99);
  EXPECT_EQ(kv.match_prefix(same_prefix, t, h), 8);
  EXPECT_EQ(t.blocks().size(), 2u);
  kv.release(t);
  // Exactly 8 tokens: the last must be computed, so only the first block is reused.
  BlockTable t2(4);
  std::vector<uint64_t> h2;
  EXPECT_EQ(kv.match_prefix(seq(8), t2, h2), 4);
  kv.release(t2);
  // A different first block shares nothing, even if later tokens agree.
  auto other = seq(10);
  other[0] = 500;
  BlockTable t3(4);
  std::vector<uint64_t> h3;
  EXPECT_EQ(kv.match_prefix(other, t3, h3), 0);
  EXPECT_EQ(kv.stats().hit_tokens, 12);
  EXPECT_EQ(kv.stats().query_tokens, 11 + 8 + 10);
  EXPECT_TRUE(kv.check_invariants());
}

TEST(KvCacheManager, SharedBlocksAreReferenceCounted) {
  KvCacheManager kv(8, 4, true);
  run_and_release(kv, seq(9));
  BlockTable a(4), b(4);
  std::vector<uint64_t> ha, hb;
  EXPECT_EQ(kv.match_prefix(seq(9), a, ha), 8);
  EXPECT_EQ(kv.match_prefix(seq(9), b, hb), 8);
  EXPECT_EQ(kv.ref_count(a.blocks()[0]), 2);
  kv.release(a);
  EXPECT_EQ(kv.ref_count(b.blocks()[0]), 1);
  EXPECT_TRUE(kv.check_invariants());
  kv.release(b);
  EXPECT_TRUE(kv.check_invariants());
}

TEST(KvCacheManager, EvictsLeastRecentlyUsedOnlyWhenNeeded) {
  KvCacheManager kv(4, 4, true);
  run_and_release(kv, seq(5, 0));    // caches 1 block (A)
  run_and_release(kv, seq(5, 100));  // caches 1 block (B), A is older
  EXPECT_EQ(kv.num_available(), 4);  // cached blocks count as available
  BlockTable big(4);
  ASSERT_TRUE(kv.allocate(big, 12).ok());  // 3 blocks: 2 free + 1 eviction (A, the oldest)
  EXPECT_EQ(kv.stats().evictions, 1);
  BlockTable ta(4), tb(4);
  std::vector<uint64_t> ha, hb;
  EXPECT_EQ(kv.match_prefix(seq(5, 0), ta, ha), 0);    // A was evicted
  EXPECT_EQ(kv.match_prefix(seq(5, 100), tb, hb), 4);  // B survived
  EXPECT_FALSE(kv.allocate(ta, 8).ok());               // nothing left: no change
  EXPECT_TRUE(ta.blocks().empty());
  kv.release(big);
  kv.release(tb);
  EXPECT_TRUE(kv.check_invariants());
}

TEST(KvCacheManager, DisabledCacheNeverMatches) {
  KvCacheManager kv(8, 4, false);
  run_and_release(kv, seq(9));
  BlockTable t(4);
  std::vector<uint64_t> h;
  EXPECT_EQ(kv.match_prefix(seq(9), t, h), 0);
  EXPECT_EQ(kv.num_available(), 8);
  EXPECT_TRUE(kv.check_invariants());
}

}  // namespace
}  // namespace tessera
