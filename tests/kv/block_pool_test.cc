#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <set>

#include "kv/block_table.h"

namespace tessera {
namespace {

TEST(BlockPool, AllocatesEveryBlockOnceThenRunsOut) {
  BlockPool pool(4);
  std::set<int32_t> got;
  for (int i = 0; i < 4; ++i) {
    auto b = pool.allocate();
    ASSERT_TRUE(b.has_value());
    got.insert(*b);
  }
  EXPECT_EQ(got, (std::set<int32_t>{0, 1, 2, 3}));
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_EQ(pool.num_free(), 0);
}

TEST(BlockPool, RefCountsKeepSharedBlocks) {
  BlockPool pool(2);
  const int32_t b = *pool.allocate();
  pool.retain(b);
  EXPECT_EQ(pool.ref_count(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 1);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 2);
}

TEST(BlockTable, SlotsFollowBlocks) {
  BlockPool pool(8);
  BlockTable table(4);
  ASSERT_TRUE(table.reserve(6, pool).ok());
  ASSERT_EQ(table.blocks().size(), 2u);
  EXPECT_EQ(table.capacity(), 8);
  EXPECT_EQ(table.slot(0), table.blocks()[0] * 4);
  EXPECT_EQ(table.slot(5), table.blocks()[1] * 4 + 1);
  ASSERT_TRUE(table.reserve(8, pool).ok());
  EXPECT_EQ(table.blocks().size(), 2u);  // no growth needed
  table.release_all(pool);
  EXPECT_EQ(pool.num_free(), 8);
}

TEST(BlockTable, ReserveFailureKeepsNothingNew) {
  BlockPool pool(3);
  BlockTable table(4);
  ASSERT_TRUE(table.reserve(4, pool).ok());
  const Status st = table.reserve(20, pool);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(table.blocks().size(), 1u);
  EXPECT_EQ(pool.num_free(), 2);
}

}  // namespace
}  // namespace tessera
