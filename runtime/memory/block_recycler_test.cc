#include "runtime/memory/block_recycler.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(BlockRecyclerTest, RecycledBlockComesBackReset) {
  BlockRecycler recycler;
  Block* b = recycler.NewBlock();
  b->size = 4096;
  b->allocated = true;
  b->session = 7;
  b->stream_uses.push_back(reinterpret_cast<StreamHandle>(0x10));
  recycler.RecycleBlock(b);
  Block* again = recycler.NewBlock();
  EXPECT_EQ(again, b);
  EXPECT_EQ(again->size, 0u);
  EXPECT_FALSE(again->allocated);
  EXPECT_EQ(again->session, 0u);
  EXPECT_EQ(again->last_owner, kFreshMemory);
  EXPECT_TRUE(again->stream_uses.empty());
  delete again;
}

TEST(BlockRecyclerTest, ErasedNodeServesTheNextInsert) {
  BlockRecycler recycler;
  BlockPool pool(true);
  Block a, b;
  a.size = 512;
  b.size = 1024;
  recycler.PoolInsert(pool.blocks, &a);
  recycler.PoolInsert(pool.blocks, &b);
  auto next = recycler.PoolErase(pool.blocks, pool.blocks.find(&a));
  ASSERT_NE(next, pool.blocks.end());
  EXPECT_EQ(*next, &b);
  recycler.PoolInsert(pool.blocks, &a);
  EXPECT_EQ(pool.blocks.size(), 2u);
  EXPECT_EQ(*pool.blocks.begin(), &a);
}

}  // namespace
}  // namespace tensord
