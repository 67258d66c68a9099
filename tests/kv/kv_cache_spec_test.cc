#include "kv/kv_cache_spec.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

KvCacheSpec stories_spec() {
  KvCacheSpec s;
  s.n_layers = 5;
  s.n_kv_heads = 4;
  s.head_dim = 8;
  return s;
}

TEST(KvCacheSpec, BytesPerTokenFormula) {
  // 2 x layers x kv_heads x head_dim x 2 bytes (f16).
  EXPECT_EQ(stories_spec().bytes_per_token(), 2u * 5 * 4 * 8 * 2);
  KvCacheSpec llama3_8b;
  llama3_8b.n_layers = 32;
  llama3_8b.n_kv_heads = 8;
  llama3_8b.head_dim = 128;
  EXPECT_EQ(llama3_8b.bytes_per_token(), 128u * 1024);  // 128 KiB per token
}

TEST(KvCacheSpec, SizesFromMemoryOrContext) {
  KvCacheSpec s = stories_spec();
  ASSERT_TRUE(size_kv_cache(s, 1 << 20, 0).ok());  // 1 MiB / (640 B x 16) = 102 blocks
  EXPECT_EQ(s.num_blocks, 102);
  EXPECT_EQ(s.capacity_tokens(), 1632);
  ASSERT_TRUE(size_kv_cache(s, 0, 100).ok());
  EXPECT_EQ(s.num_blocks, 7);  // rounded up
  EXPECT_FALSE(size_kv_cache(s, 100, 0).ok());  // less than one block
  EXPECT_FALSE(size_kv_cache(s, 0, 0).ok());
}

}  // namespace
}  // namespace tessera
