// Runs for real only where a CUDA device is visible; elsewhere it checks that
// the factories fail cleanly and skips, saying why.
#include "runtime/memory/cuda_backend.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(CudaBackendTest, AllocatorRoundTripOrSkip) {
  absl::StatusOr<std::unique_ptr<CachingAllocator>> alloc =
      MakeCudaCachingAllocator(0);
  if (!CudaBackendsBuilt()) {
    EXPECT_TRUE(absl::IsUnimplemented(alloc.status())) << alloc.status();
    GTEST_SKIP() << "built without CUDA";
  }
  if (!alloc.ok()) GTEST_SKIP() << "no usable CUDA device: " << alloc.status();
  EXPECT_EQ((*alloc)->device_name(), "cuda:0");
  absl::StatusOr<void*> p = (*alloc)->Allocate(1000, AllocContext{1, nullptr});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 512, 0u);
  ASSERT_TRUE((*alloc)->RecordStream(*p, nullptr).ok());
  (*alloc)->Free(*p);
  // Reuse by another session goes through Zero (cudaMemsetAsync).
  absl::StatusOr<void*> q = (*alloc)->Allocate(1000, AllocContext{2, nullptr});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q, *p);
  (*alloc)->Free(*q);
  EXPECT_EQ((*alloc)->EmptyCache(), 2 << 20);
}

TEST(CudaBackendTest, PinnedHostOrSkip) {
  absl::StatusOr<std::unique_ptr<CachingAllocator>> alloc =
      MakePinnedHostCachingAllocator(0);
  if (!alloc.ok()) GTEST_SKIP() << alloc.status();
  absl::StatusOr<void*> p = (*alloc)->Allocate(4096, AllocContext{});
  ASSERT_TRUE(p.ok()) << p.status();
  static_cast<char*>(*p)[4095] = 1;
  (*alloc)->Free(*p);
}

}  // namespace
}  // namespace tensord
