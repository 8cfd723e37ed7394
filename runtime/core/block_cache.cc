#include "runtime/core/block_cache.h"

#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "runtime/core/mutex.h"

namespace tensord {
namespace {

// A few full batches in flight on each end; beyond it blocks go to malloc.
constexpr size_t kCacheBytes = 32 << 20;

struct BlockCache {
  Mutex mu;
  std::vector<std::pair<size_t, void*>> blocks ABSL_GUARDED_BY(mu);
  size_t bytes ABSL_GUARDED_BY(mu) = 0;
};

BlockCache& Cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed
  return *cache;
}

}  // namespace

void* AllocateCachedBlock(size_t size) {
  BlockCache& cache = Cache();
  {
    MutexLock lock(&cache.mu);
    for (size_t i = cache.blocks.size(); i-- > 0;) {
      if (cache.blocks[i].first != size) continue;
      void* block = cache.blocks[i].second;
      cache.blocks[i] = cache.blocks.back();
      cache.blocks.pop_back();
      cache.bytes -= size;
      return block;
    }
  }
  void* block = std::malloc(size);
  if (block == nullptr) throw std::bad_alloc();  // as operator new would
  return block;
}

size_t CachedBlockBytes() {
  BlockCache& cache = Cache();
  MutexLock lock(&cache.mu);
  return cache.bytes;
}

void FreeCachedBlock(void* block, size_t size) {
  BlockCache& cache = Cache();
  {
    MutexLock lock(&cache.mu);
    if (cache.bytes + size <= kCacheBytes) {
      cache.blocks.emplace_back(size, block);
      cache.bytes += size;
      return;
    }
  }
  std::free(block);
}

}  // namespace tensord
