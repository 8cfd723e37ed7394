#include "runtime/core/block_cache.h"

#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(BlockCacheTest, FreedBlockOfTheSameSizeIsReused) {
  void* a = AllocateCachedBlock(16 << 10);
  std::memset(a, 1, 16 << 10);  // the whole block is usable
  FreeCachedBlock(a, 16 << 10);
  void* other_size = AllocateCachedBlock(32 << 10);
  EXPECT_NE(other_size, a);
  void* again = AllocateCachedBlock(16 << 10);
  EXPECT_EQ(again, a);
  FreeCachedBlock(again, 16 << 10);
  FreeCachedBlock(other_size, 32 << 10);
}

TEST(BlockCacheTest, KeepsAtMostItsCapAndFreesTheRest) {
  // 40 blocks of 1 MiB, every one distinct while held; freed, the cache
  // keeps at most its 32 MiB of them; asked again, it hands them back.
  std::vector<void*> held;
  for (int i = 0; i < 40; ++i) held.push_back(AllocateCachedBlock(1 << 20));
  for (size_t i = 0; i < held.size(); ++i) {
    for (size_t j = i + 1; j < held.size(); ++j) ASSERT_NE(held[i], held[j]);
  }
  const size_t before = CachedBlockBytes();
  for (void* b : held) FreeCachedBlock(b, 1 << 20);
  const size_t cached = CachedBlockBytes();
  EXPECT_LE(cached, size_t{32} << 20);
  EXPECT_GE(cached, before + (size_t{31} << 20));  // room for all but one
  for (void*& b : held) b = AllocateCachedBlock(1 << 20);
  EXPECT_EQ(CachedBlockBytes(), before);  // the 1 MiB blocks all reused
  for (void* b : held) FreeCachedBlock(b, 1 << 20);
}

TEST(BlockCacheTest, ConcurrentUseHandsEachBlockToOneOwner) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 2000; ++i) {
        auto* b = static_cast<unsigned char*>(AllocateCachedBlock(4096));
        std::memset(b, t, 4096);
        for (int k = 0; k < 4096; k += 512) ASSERT_EQ(b[k], t);
        FreeCachedBlock(b, 4096);
      }
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
}  // namespace tensord
