// SharedBuffers in process: ids, the per-session cap and count, the quota
// charge (taken at Allocate, returned by Free, Clear and the destructor),
// clear errors for unknown ids, and regions that outlive Free while a copy
// still holds them.
#include "server/shared_buffers.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class SharedBuffersTest : public ::testing::Test {
 protected:
  SharedBuffersTest() : quota_(std::make_unique<LimitedBackend>(64 * kMiB)) {
    quota_.SetSessionQuota(7, 8 * kMiB);
  }
  // Bytes the account of session 7 may still take.
  bool Fits(size_t bytes) {
    absl::StatusOr<uint64_t> account = quota_.ChargeExternal(7, bytes);
    if (!account.ok()) return false;
    quota_.UnchargeExternal(*account, bytes);
    return true;
  }
  CachingAllocator quota_;
};

TEST_F(SharedBuffersTest, ChargesTheQuotaUntilFreed) {
  SharedBuffers buffers(7, &quota_, 64 * kMiB);
  v1::SharedBuffer a, b;
  ASSERT_TRUE(buffers.Allocate(5 * kMiB, &a).ok());
  EXPECT_EQ(a.region(), 1u);
  EXPECT_EQ(a.shm().data_offset(), ShmRegion::kDataOffset);
  EXPECT_EQ(a.shm().size(), ShmRegion::kDataOffset + 5 * kMiB);
  EXPECT_FALSE(Fits(4 * kMiB));
  absl::Status over = buffers.Allocate(4 * kMiB, &b);
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_NE(over.message().find("shared buffer: session 7 is over"),
            std::string::npos)
      << over;
  EXPECT_EQ(buffers.usage().count, 1u);
  EXPECT_EQ(buffers.usage().bytes, 5 * kMiB);  // the refused one is not in it
  buffers.Free(a.region());
  buffers.Free(12345);  // unknown: ignored
  EXPECT_EQ(buffers.usage().count, 0u);
  EXPECT_EQ(buffers.usage().bytes, 0u);
  EXPECT_TRUE(Fits(8 * kMiB));
  ASSERT_TRUE(buffers.Allocate(4 * kMiB, &b).ok());
  EXPECT_EQ(b.region(), 2u);  // ids are not reused
  EXPECT_EQ(buffers.usage().bytes, 4 * kMiB);
  buffers.Clear();
  EXPECT_EQ(buffers.usage().count, 0u);
  EXPECT_EQ(buffers.usage().bytes, 0u);
  EXPECT_TRUE(Fits(8 * kMiB));
  {
    SharedBuffers scoped(7, &quota_, 64 * kMiB);
    ASSERT_TRUE(scoped.Allocate(6 * kMiB, &a).ok());
    EXPECT_FALSE(Fits(4 * kMiB));
  }
  EXPECT_TRUE(Fits(8 * kMiB));  // the destructor gave it back
}

TEST_F(SharedBuffersTest, CapsCountAndErrors) {
  SharedBuffers buffers(3, nullptr, 2 * kMiB);
  v1::SharedBuffer buffer;
  EXPECT_EQ(buffers.Allocate(0, &buffer).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(buffers.Allocate(kMiB, &buffer).ok());
  absl::Status capped = buffers.Allocate(kMiB + 1, &buffer);
  EXPECT_EQ(capped.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(capped.message().find("a session may have"), std::string::npos);
  SharedBuffers many(3, nullptr, 1 << 30);
  for (size_t i = 0; i < kMaxSharedBuffers; ++i) {
    ASSERT_TRUE(many.Allocate(1, &buffer).ok()) << i;
  }
  EXPECT_EQ(many.Allocate(1, &buffer).code(),
            absl::StatusCode::kResourceExhausted);
  SharedBuffers off(3, nullptr, 0);
  EXPECT_EQ(off.Allocate(1, &buffer).code(),
            absl::StatusCode::kFailedPrecondition);
  auto missing = buffers.Find(99, "put");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "put: region 99 is not a shared buffer of this session (never "
            "allocated, or already freed)");
}

TEST_F(SharedBuffersTest, AHeldRegionOutlivesFree) {
  SharedBuffers buffers(3, nullptr, 8 * kMiB);
  v1::SharedBuffer buffer;
  ASSERT_TRUE(buffers.Allocate(kMiB, &buffer).ok());
  auto held = buffers.Find(buffer.region(), "get");
  ASSERT_TRUE(held.ok());
  buffers.Free(buffer.region());
  EXPECT_FALSE(buffers.Find(buffer.region(), "get").ok());
  // Still mapped for the copy that holds it.
  auto bytes = (*held)->Slice(ShmRegion::kDataOffset, kMiB, "get");
  ASSERT_TRUE(bytes.ok());
  (*bytes)[kMiB - 1] = 1;
}

}  // namespace
}  // namespace tensord
