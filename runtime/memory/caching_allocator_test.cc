// Core behaviour of CachingAllocator on the capacity-limited test backend:
// rounding, pool choice, best fit, splitting, coalescing, reuse, EmptyCache,
// and the out-of-memory path (free cache and retry, then a real OOM).
#include "runtime/memory/caching_allocator.h"

#include <cstring>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

class CachingAllocatorTest : public ::testing::Test {
 protected:
  void Make(size_t capacity) {
    auto backend = std::make_unique<LimitedBackend>(capacity);
    backend_ = backend.get();
    alloc_ = std::make_unique<CachingAllocator>(std::move(backend));
  }
  void SetUp() override { Make(256 * kMiB); }

  void* Alloc(size_t bytes, uint64_t session = 1) {
    absl::StatusOr<void*> p = alloc_->Allocate(bytes, AllocContext{session});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : nullptr;
  }
  int64_t Stat(const std::string& key) { return alloc_->Stats().at(key); }
  static char* C(void* p) { return static_cast<char*>(p); }

  LimitedBackend* backend_ = nullptr;  // owned by alloc_
  std::unique_ptr<CachingAllocator> alloc_;
};

TEST_F(CachingAllocatorTest, RoundsTo512AndZeroBytesIsUnique) {
  void* a = Alloc(1);
  void* b = Alloc(513);
  void* c = Alloc(0);
  void* d = Alloc(0);
  EXPECT_EQ(alloc_->AllocationSize(a), 512u);
  EXPECT_EQ(alloc_->AllocationSize(b), 1024u);
  EXPECT_EQ(alloc_->AllocationSize(c), 512u);
  EXPECT_NE(c, nullptr);
  EXPECT_NE(c, d);
  EXPECT_EQ(alloc_->AllocationSize(C(a) + 1), 0u);
  for (void* p : {a, b, c, d}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 512, 0u);
    alloc_->Free(p);
  }
}

TEST_F(CachingAllocatorTest, ChoosesPoolAndSegmentSize) {
  void* small = Alloc(kMiB);  // exactly 1 MiB: small pool, 2 MiB segment
  EXPECT_EQ(Stat("reserved_bytes.small_pool.current"), int64_t(2 * kMiB));
  void* mid = Alloc(kMiB + 1);  // large pool, 20 MiB segment
  EXPECT_EQ(Stat("reserved_bytes.large_pool.current"), int64_t(20 * kMiB));
  // >= 10 MiB and larger than the cached 19 MiB rest: its own segment,
  // rounded up to 2 MiB; the < 1 MiB remainder is not split off.
  void* big = Alloc(21 * kMiB + 1);
  EXPECT_EQ(Stat("reserved_bytes.large_pool.current"), int64_t(42 * kMiB));
  EXPECT_EQ(alloc_->AllocationSize(big), 22 * kMiB);
  EXPECT_EQ(Stat("segment.small_pool.current"), 1);
  EXPECT_EQ(Stat("segment.large_pool.current"), 2);
  EXPECT_EQ(backend_->used_bytes(), 44 * kMiB);
  for (void* p : {small, mid, big}) alloc_->Free(p);
}

TEST_F(CachingAllocatorTest, SplitsSmallSegmentsIntoAdjacentBlocks) {
  void* a = Alloc(1000);
  void* b = Alloc(3000);
  void* c = Alloc(512);
  EXPECT_EQ(C(b), C(a) + 1024);
  EXPECT_EQ(C(c), C(b) + 3072);
  EXPECT_EQ(backend_->num_mallocs(), 1);
  EXPECT_EQ(Stat("inactive_split_bytes.small_pool.current"),
            int64_t(2 * kMiB - 4608));
  for (void* p : {a, b, c}) alloc_->Free(p);
}

TEST_F(CachingAllocatorTest, LargeSplitOnlyWhenMoreThan1MiBRemains) {
  void* a = Alloc(5 * kMiB);  // 15 MiB left: split
  EXPECT_EQ(alloc_->AllocationSize(a), 5 * kMiB);
  void* b = Alloc(14 * kMiB);  // from the 15 MiB rest, 1 MiB left: no split
  EXPECT_EQ(C(b), C(a) + 5 * kMiB);
  EXPECT_EQ(alloc_->AllocationSize(b), 15 * kMiB);
  EXPECT_EQ(backend_->num_mallocs(), 1);
  alloc_->Free(a);
  alloc_->Free(b);
}

TEST_F(CachingAllocatorTest, CoalescesFreeNeighbours) {
  void* a = Alloc(4096);
  void* b = Alloc(4096);
  void* c = Alloc(4096);
  alloc_->Free(b);
  alloc_->Free(a);  // merges with b
  EXPECT_EQ(alloc_->Snapshot().segments.at(0).blocks.size(), 3u);
  void* ab = Alloc(8192);  // the merged a+b hole is the best fit
  EXPECT_EQ(ab, a);
  alloc_->Free(ab);
  alloc_->Free(c);  // everything merges back into one block
  MemorySnapshot snap = alloc_->Snapshot();
  ASSERT_EQ(snap.segments.size(), 1u);
  ASSERT_EQ(snap.segments[0].blocks.size(), 1u);
  EXPECT_EQ(snap.segments[0].blocks[0].size, 2 * kMiB);
  EXPECT_EQ(Stat("inactive_split.all.current"), 0);
  EXPECT_EQ(alloc_->EmptyCache(), int64_t(2 * kMiB));
  EXPECT_EQ(backend_->used_bytes(), 0u);
}

TEST_F(CachingAllocatorTest, BestFitPicksSmallestFittingHole) {
  void* h4 = Alloc(4 * kKiB);
  void* x = Alloc(512);
  void* h8 = Alloc(8 * kKiB);
  void* y = Alloc(512);
  alloc_->Free(h4);
  alloc_->Free(h8);
  // Holes: 4 KiB, 8 KiB and the segment's tail.
  void* p = Alloc(6 * kKiB);
  EXPECT_EQ(p, h8);
  void* q = Alloc(4 * kKiB);
  EXPECT_EQ(q, h4);
  for (void* r : {p, q, x, y}) alloc_->Free(r);
}

TEST_F(CachingAllocatorTest, ReusesCachedBlocksWithoutTheBackend) {
  for (int i = 0; i < 100; ++i) {
    void* p = Alloc(300 * kKiB);
    void* q = Alloc(30 * kMiB);
    alloc_->Free(p);
    alloc_->Free(q);
  }
  EXPECT_EQ(backend_->num_mallocs(), 2);
  EXPECT_EQ(Stat("num_device_alloc"), 2);
  EXPECT_EQ(Stat("allocation.all.allocated"), 200);
}

TEST_F(CachingAllocatorTest, FreeIgnoresNullAndForeignPointers) {
  alloc_->Free(nullptr);
  int local = 0;
  alloc_->Free(&local);
  void* p = Alloc(100);
  alloc_->Free(p);
  alloc_->Free(p);  // double free: logged and ignored
  EXPECT_EQ(Stat("allocation.all.current"), 0);
  EXPECT_EQ(Stat("allocation.all.freed"), 1);
}

TEST_F(CachingAllocatorTest, MissFreesCacheAndRetries) {
  Make(21 * kMiB);
  alloc_->Free(Alloc(1000));     // 2 MiB small segment, now cached
  void* big = Alloc(20 * kMiB);  // 2 + 20 > 21: release the cache, retry
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(Stat("num_alloc_retries"), 1);
  EXPECT_EQ(Stat("num_ooms"), 0);
  EXPECT_EQ(Stat("num_device_free"), 1);
  EXPECT_EQ(Stat("reserved_bytes.all.current"), int64_t(20 * kMiB));
  EXPECT_EQ(backend_->used_bytes(), 20 * kMiB);
  alloc_->Free(big);
}

TEST_F(CachingAllocatorTest, TrueOutOfMemoryReportsTheNumbers) {
  Make(21 * kMiB);
  void* big = Alloc(20 * kMiB, /*session=*/7);
  absl::StatusOr<void*> p = alloc_->Allocate(5 * kMiB, AllocContext{7});
  ASSERT_TRUE(absl::IsResourceExhausted(p.status())) << p.status();
  const std::string msg(p.status().message());
  EXPECT_THAT(msg, HasSubstr("out of memory on test"));
  EXPECT_THAT(msg, HasSubstr("tried to allocate 5.00 MiB"));
  EXPECT_THAT(msg, HasSubstr("new 20.00 MiB segment"));
  EXPECT_THAT(msg, HasSubstr("total capacity of 21.00 MiB"));
  EXPECT_THAT(msg, HasSubstr("1.00 MiB is not reserved"));
  EXPECT_THAT(msg, HasSubstr("20.00 MiB is allocated"));
  EXPECT_THAT(msg, HasSubstr("0 B is reserved but unallocated"));
  EXPECT_THAT(msg, HasSubstr("session 7 holds 20.00 MiB"));
  EXPECT_EQ(Stat("num_ooms"), 1);
  EXPECT_EQ(Stat("num_alloc_retries"), 1);
  // Still consistent and usable afterwards.
  EXPECT_EQ(Stat("allocation.all.current"), 1);
  EXPECT_EQ(alloc_->SessionBytes(7), int64_t(20 * kMiB));
  alloc_->Free(big);
  void* again = Alloc(5 * kMiB);
  EXPECT_EQ(again, big);
  alloc_->Free(again);
}

TEST_F(CachingAllocatorTest, EmptyCacheKeepsSegmentsInUse) {
  void* a = Alloc(100);
  alloc_->Free(Alloc(3 * kMiB));
  EXPECT_EQ(alloc_->EmptyCache(), int64_t(20 * kMiB));
  EXPECT_EQ(Stat("segment.all.current"), 1);
  alloc_->Free(a);
  EXPECT_EQ(alloc_->EmptyCache(), int64_t(2 * kMiB));
  EXPECT_EQ(alloc_->EmptyCache(), 0);
  EXPECT_EQ(backend_->num_frees(), 2);
}

// A device error other than out-of-memory (e.g. a sticky CUDA error).
class BrokenBackend : public LimitedBackend {
 public:
  BrokenBackend() : LimitedBackend(256 * kMiB) {}
  absl::StatusOr<void*> Malloc(size_t) override {
    return absl::InternalError("cudaMalloc: cudaErrorIllegalAddress");
  }
};

TEST(CachingAllocatorErrorTest, DeviceErrorsPassThroughWithoutRetry) {
  CachingAllocator alloc(std::make_unique<BrokenBackend>());
  absl::StatusOr<void*> p = alloc.Allocate(100, AllocContext{});
  EXPECT_TRUE(absl::IsInternal(p.status())) << p.status();
  EXPECT_EQ(alloc.Stats().at("num_ooms"), 0);
  EXPECT_EQ(alloc.Stats().at("num_alloc_retries"), 0);
  EXPECT_EQ(alloc.Stats().at("segment.all.current"), 0);
}

TEST(MakeHostCachingAllocatorTest, AllocatesRealHostMemory) {
  std::unique_ptr<CachingAllocator> alloc = MakeHostCachingAllocator("cpu");
  EXPECT_EQ(alloc->device_name(), "cpu");
  EXPECT_EQ(alloc->device_index(), 0);
  absl::StatusOr<void*> p = alloc->Allocate(100, AllocContext{});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 64, 0u);
  std::memset(*p, 1, 100);
  alloc->Free(*p);
  EXPECT_EQ(alloc->EmptyCache(), int64_t(2 * kMiB));
  EXPECT_EQ(DeviceIndexFromName("cuda:3"), 3);
  EXPECT_EQ(DeviceIndexFromName("cuda:x"), 0);
}

TEST(FormatBytesTest, Units) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(20 << 20), "20.00 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3.00 GiB");
}

}  // namespace
}  // namespace tensord
