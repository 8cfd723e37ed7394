#include "runtime/memory/limited_backend.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

StreamHandle S(uintptr_t id) { return reinterpret_cast<StreamHandle>(id); }

TEST(LimitedBackendTest, EnforcesCapacityAndCounts) {
  LimitedBackend backend(1 << 20);
  absl::StatusOr<void*> a = backend.Malloc(768 << 10);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<void*> b = backend.Malloc(512 << 10);
  EXPECT_TRUE(absl::IsResourceExhausted(b.status())) << b.status();
  EXPECT_EQ(backend.used_bytes(), 768u << 10);
  backend.Free(*a, 768 << 10);
  EXPECT_EQ(backend.used_bytes(), 0u);
  EXPECT_EQ(backend.num_mallocs(), 1);
  EXPECT_EQ(backend.num_frees(), 1);
}

TEST(LimitedBackendTest, InjectedFailures) {
  LimitedBackend backend(1 << 20);
  backend.FailNextMallocs(1);
  EXPECT_TRUE(absl::IsResourceExhausted(backend.Malloc(4096).status()));
  absl::StatusOr<void*> p = backend.Malloc(4096);
  ASSERT_TRUE(p.ok());
  backend.Free(*p, 4096);
}

TEST(LimitedBackendTest, EventsCompleteWhenTheTestSays) {
  LimitedBackend backend(1 << 20);
  EventHandle e1 = *backend.RecordEvent(S(1));
  EventHandle e2 = *backend.RecordEvent(S(2));
  EXPECT_FALSE(*backend.EventCompleted(e1));
  backend.CompleteEventsOn(S(1));
  EXPECT_TRUE(*backend.EventCompleted(e1));
  EXPECT_FALSE(*backend.EventCompleted(e2));
  backend.CompleteAllEvents();
  EXPECT_TRUE(*backend.EventCompleted(e2));
  EXPECT_EQ(backend.LiveEvents(), 2);
  backend.DestroyEvent(e1);
  backend.DestroyEvent(e2);
  EXPECT_EQ(backend.LiveEvents(), 0);
  EXPECT_FALSE(backend.EventCompleted(e1).ok());
  backend.SetEventsCompleteImmediately(true);
  EventHandle e3 = *backend.RecordEvent(S(3));
  EXPECT_TRUE(*backend.EventCompleted(e3));
  backend.DestroyEvent(e3);
}

}  // namespace
}  // namespace tensord
