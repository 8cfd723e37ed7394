// Stream rules: a block is reused only on its own stream; a block used on
// other streams (RecordStream) is not reusable until their events complete.
#include <memory>

#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

constexpr size_t kMiB = 1024 * 1024;
const StreamHandle kS1 = reinterpret_cast<StreamHandle>(1);
const StreamHandle kS2 = reinterpret_cast<StreamHandle>(2);
const StreamHandle kS3 = reinterpret_cast<StreamHandle>(3);

class StreamTest : public ::testing::Test {
 protected:
  StreamTest() {
    auto backend = std::make_unique<LimitedBackend>(256 * kMiB);
    backend_ = backend.get();
    alloc_ = std::make_unique<CachingAllocator>(std::move(backend));
  }
  void* Alloc(size_t bytes, StreamHandle stream) {
    absl::StatusOr<void*> p = alloc_->Allocate(bytes, AllocContext{1, stream});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : nullptr;
  }
  BlockState StateOf(void* p) {
    for (const SegmentSnapshot& s : alloc_->Snapshot().segments) {
      for (const BlockSnapshot& b : s.blocks) {
        if (b.address == reinterpret_cast<uintptr_t>(p)) return b.state;
      }
    }
    ADD_FAILURE() << "no block at " << p;
    return BlockState::kInactive;
  }
  int64_t Stat(const std::string& key) { return alloc_->Stats().at(key); }

  LimitedBackend* backend_;
  std::unique_ptr<CachingAllocator> alloc_;
};

TEST_F(StreamTest, BlocksAreReusedOnlyOnTheirOwnStream) {
  void* p = Alloc(4096, kS1);
  alloc_->Free(p);
  void* q = Alloc(4096, kS2);
  EXPECT_NE(q, p);
  EXPECT_EQ(backend_->num_mallocs(), 2);  // a segment per stream
  void* r = Alloc(4096, kS1);
  EXPECT_EQ(r, p);
  EXPECT_EQ(Stat("stream.0x1.allocated_bytes"), 4096);
  EXPECT_EQ(Stat("stream.0x2.allocated_bytes"), 4096);
  alloc_->Free(q);
  alloc_->Free(r);
}

TEST_F(StreamTest, RecordedStreamDelaysReuseUntilEventCompletes) {
  void* p = Alloc(4096, kS1);
  ASSERT_TRUE(alloc_->RecordStream(p, kS2).ok());
  alloc_->Free(p);
  EXPECT_EQ(StateOf(p), BlockState::kActivePendingFree);
  EXPECT_EQ(backend_->LiveEvents(), 1);
  EXPECT_EQ(Stat("allocation.all.current"), 0);
  EXPECT_EQ(Stat("active.all.current"), 1);
  EXPECT_EQ(Stat("active_bytes.all.current"), 4096);
  EXPECT_EQ(alloc_->SessionBytes(1), 0);

  void* q = Alloc(4096, kS1);  // p is not reusable yet
  EXPECT_NE(q, p);
  alloc_->Free(q);

  backend_->CompleteEventsOn(kS2);
  void* r = Alloc(4096, kS1);  // events are polled on allocation
  EXPECT_EQ(r, p);
  EXPECT_EQ(backend_->LiveEvents(), 0);
  EXPECT_EQ(Stat("active.all.current"), 1);
  alloc_->Free(r);
  EXPECT_EQ(StateOf(p), BlockState::kInactive);
}

TEST_F(StreamTest, WaitsForEveryRecordedStream) {
  void* p = Alloc(3 * kMiB, kS1);
  ASSERT_TRUE(alloc_->RecordStream(p, kS2).ok());
  ASSERT_TRUE(alloc_->RecordStream(p, kS3).ok());
  ASSERT_TRUE(alloc_->RecordStream(p, kS3).ok());  // duplicates are ignored
  alloc_->Free(p);
  EXPECT_EQ(backend_->LiveEvents(), 2);
  backend_->CompleteEventsOn(kS2);
  EXPECT_EQ(alloc_->EmptyCache(), 0);  // still pending: segment kept
  EXPECT_EQ(StateOf(p), BlockState::kActivePendingFree);
  backend_->CompleteEventsOn(kS3);
  EXPECT_EQ(alloc_->EmptyCache(), int64_t(20 * kMiB));
  EXPECT_EQ(backend_->used_bytes(), 0u);
  EXPECT_EQ(backend_->LiveEvents(), 0);
}

TEST_F(StreamTest, RecordingTheOwnStreamIsANoOp) {
  void* p = Alloc(4096, kS1);
  ASSERT_TRUE(alloc_->RecordStream(p, kS1).ok());
  alloc_->Free(p);
  EXPECT_EQ(backend_->LiveEvents(), 0);
  EXPECT_EQ(StateOf(p), BlockState::kInactive);
}

TEST_F(StreamTest, RecordStreamOfUnknownPointerIsNotFound) {
  int x;
  EXPECT_TRUE(absl::IsNotFound(alloc_->RecordStream(&x, kS2)));
}

TEST_F(StreamTest, PendingBlocksSurviveDestruction) {
  void* p = Alloc(4096, kS1);
  ASSERT_TRUE(alloc_->RecordStream(p, kS2).ok());
  alloc_->Free(p);
  alloc_.reset();  // destroys the pending event and segment; ASan checks
}

TEST(HostStreamTest, CpuEventsAreCompleteImmediately) {
  std::unique_ptr<CachingAllocator> alloc = MakeHostCachingAllocator();
  void* p = *alloc->Allocate(4096, AllocContext{1, nullptr});
  ASSERT_TRUE(alloc->RecordStream(p, kS2).ok());
  alloc->Free(p);
  void* q = *alloc->Allocate(4096, AllocContext{1, nullptr});
  EXPECT_EQ(q, p);
  alloc->Free(q);
}

}  // namespace
}  // namespace tensord
