#include "runtime/memory/host_backend.h"

#include <cstdint>
#include <cstring>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(HostBackendTest, MallocIsPageAlignedAndZeroed) {
  HostBackend backend("cpu");
  EXPECT_EQ(backend.DeviceName(), "cpu");
  EXPECT_GT(backend.Capacity(), 0u);
  absl::StatusOr<void*> p = backend.Malloc(3 << 20);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p) % 4096, 0u);
  const auto* bytes = static_cast<const unsigned char*>(*p);
  for (size_t i = 0; i < (3u << 20); i += 4093) EXPECT_EQ(bytes[i], 0) << i;
  backend.Free(*p, 3 << 20);
}

TEST(HostBackendTest, ZeroClearsMemory) {
  HostBackend backend;
  absl::StatusOr<void*> p = backend.Malloc(8192);
  ASSERT_TRUE(p.ok());
  std::memset(*p, 0x5a, 8192);
  ASSERT_TRUE(backend.Zero(*p, 4096, nullptr).ok());
  const auto* bytes = static_cast<const unsigned char*>(*p);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[4095], 0);
  EXPECT_EQ(bytes[4096], 0x5a);
  backend.Free(*p, 8192);
}

TEST(HostBackendTest, EventsAreCompleteAtOnce) {
  HostBackend backend;
  absl::StatusOr<EventHandle> e = backend.RecordEvent(nullptr);
  ASSERT_TRUE(e.ok());
  absl::StatusOr<bool> done = backend.EventCompleted(*e);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  backend.DestroyEvent(*e);
}

TEST(HostBackendTest, ExplicitCapacityAndZeroSizeMalloc) {
  HostBackend backend("cpu:1", 12345);
  EXPECT_EQ(backend.Capacity(), 12345u);
  EXPECT_FALSE(backend.Malloc(0).ok());
}

// Note [Host capacity]: what would map past the capacity is refused, and
// freed bytes count again.
TEST(HostBackendTest, MallocStaysWithinItsCapacity) {
  const size_t page = 4096;
  HostBackend backend("cpu", 4 * page);
  absl::StatusOr<void*> a = backend.Malloc(3 * page);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<void*> b = backend.Malloc(2 * page);
  EXPECT_TRUE(absl::IsResourceExhausted(b.status())) << b.status();
  EXPECT_FALSE(backend.Malloc(size_t{1} << 62).ok());  // no wrap-around
  backend.Free(*a, 3 * page);
  absl::StatusOr<void*> c = backend.Malloc(4 * page);
  ASSERT_TRUE(c.ok()) << c.status();
  static_cast<char*>(*c)[4 * page - 1] = 1;  // mapped and writable
  backend.Free(*c, 4 * page);
}

}  // namespace
}  // namespace tensord
