// Sessions: exact accounting, quotas checked before allocating, and Note
// [Scrub] (bytes written by one session are zero when another receives them).
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() {
    auto backend = std::make_unique<LimitedBackend>(256 * kMiB);
    backend_ = backend.get();
    alloc_ = std::make_unique<CachingAllocator>(std::move(backend));
  }
  void* Alloc(size_t bytes, uint64_t session) {
    absl::StatusOr<void*> p = alloc_->Allocate(bytes, AllocContext{session});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : nullptr;
  }
  static bool AllZero(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      if (b[i] != 0) return false;
    }
    return true;
  }

  LimitedBackend* backend_;
  std::unique_ptr<CachingAllocator> alloc_;
};

TEST_F(SessionTest, AccountingIsExact) {
  void* a = Alloc(1000, 1);
  void* b = Alloc(3 * kMiB, 1);
  void* c = Alloc(1, 2);
  EXPECT_EQ(alloc_->SessionBytes(1), int64_t(1024 + 3 * kMiB));
  EXPECT_EQ(alloc_->SessionBytes(2), 512);
  EXPECT_EQ(alloc_->SessionBytes(3), 0);
  alloc_->Free(a);
  EXPECT_EQ(alloc_->SessionBytes(1), int64_t(3 * kMiB));
  alloc_->Free(b);
  alloc_->Free(c);
  EXPECT_EQ(alloc_->SessionBytes(1), 0);
  EXPECT_EQ(alloc_->SessionBytes(2), 0);
}

TEST_F(SessionTest, MemoryPassingToAnotherSessionIsZeroed) {
  void* a = Alloc(4096, 1);
  // Keeps a from merging with the rest of the segment, whose bytes are
  // fresh: a merged block of several owners would be scrubbed for anyone.
  void* guard = Alloc(512, 1);
  EXPECT_EQ(backend_->num_zero_calls(), 0);  // fresh memory: already zero
  std::memset(a, 0xAB, 4096);
  alloc_->Free(a);
  void* b = Alloc(4096, 2);
  ASSERT_EQ(b, a);
  EXPECT_TRUE(AllZero(b, 4096));
  EXPECT_EQ(backend_->num_zero_calls(), 1);
  EXPECT_EQ(backend_->zeroed_bytes(), 4096);
  std::memset(b, 0xCD, 4096);
  alloc_->Free(b);
  // The same session gets its own bytes back without a scrub.
  void* c = Alloc(4096, 2);
  ASSERT_EQ(c, a);
  EXPECT_EQ(backend_->num_zero_calls(), 1);
  EXPECT_EQ(static_cast<unsigned char*>(c)[0], 0xCD);
  alloc_->Free(c);
  alloc_->Free(guard);
}

TEST_F(SessionTest, MergedBlocksOfTwoSessionsAreZeroedForEither) {
  void* a = Alloc(512, 1);
  void* b = Alloc(512, 2);
  ASSERT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 512);
  std::memset(a, 1, 512);
  std::memset(b, 2, 512);
  alloc_->Free(a);
  alloc_->Free(b);  // a, b and the tail merge: mixed owners
  void* c = Alloc(1024, 1);
  ASSERT_EQ(c, a);
  EXPECT_TRUE(AllZero(c, 1024));
  alloc_->Free(c);
}

TEST_F(SessionTest, SplitRemainderIsZeroedForItsNextOwner) {
  void* a = Alloc(8 * kKiB, 1);
  std::memset(a, 7, 8 * kKiB);
  alloc_->Free(a);
  // Session 2 takes the front 4 KiB; the back 4 KiB held session 1's bytes
  // and must be zero when session 3 takes it.
  void* b = Alloc(4 * kKiB, 2);
  void* c = Alloc(4 * kKiB, 3);
  EXPECT_EQ(b, a);
  EXPECT_EQ(static_cast<char*>(c), static_cast<char*>(a) + 4 * kKiB);
  EXPECT_TRUE(AllZero(b, 4 * kKiB));
  EXPECT_TRUE(AllZero(c, 4 * kKiB));
  alloc_->Free(b);
  alloc_->Free(c);
}

// Note [Scrub]: the remainder of a scrubbed block that was split is zeroed
// with it, so the new owner's block, freed, merges with zeros, not with the
// old owner's bytes: its later allocations from the merged block are not
// scrubbed again (they were, each one, when the merge made it mixed).
TEST_F(SessionTest, AScrubbedBlockIsNotScrubbedAgainForItsOwner) {
  for (size_t bytes : {4 * kKiB, 3 * kMiB}) {  // small and large pool
    void* a = Alloc(bytes, 1);
    std::memset(a, 7, bytes);
    alloc_->Free(a);  // merges with the rest of its segment: session 1's
    void* b = Alloc(bytes, 2);
    ASSERT_EQ(b, a);
    EXPECT_TRUE(AllZero(b, bytes));
    const int64_t zeros = backend_->num_zero_calls();
    for (int i = 0; i < 4; ++i) {
      std::memset(b, 9, bytes);
      alloc_->Free(b);
      b = Alloc(bytes, 2);
      ASSERT_EQ(b, a);
      EXPECT_EQ(static_cast<unsigned char*>(b)[bytes - 1], 9);  // its own
    }
    alloc_->Free(b);
    EXPECT_EQ(backend_->num_zero_calls(), zeros) << bytes;
    // Session 3 gets zeros: session 2's bytes scrubbed, then the remainder.
    void* c = Alloc(2 * bytes, 3);
    ASSERT_EQ(c, a);
    EXPECT_TRUE(AllZero(c, 2 * bytes));
    alloc_->Free(c);
  }
}

TEST_F(SessionTest, QuotaIsCheckedBeforeAllocating) {
  alloc_->SetSessionQuota(5, kMiB);
  EXPECT_EQ(alloc_->SessionQuota(5), int64_t(kMiB));
  EXPECT_EQ(alloc_->SessionQuota(6), std::nullopt);
  void* a = Alloc(600 * kKiB, 5);
  const int64_t mallocs = backend_->num_mallocs();
  absl::StatusOr<void*> b = alloc_->Allocate(600 * kKiB, AllocContext{5});
  ASSERT_TRUE(absl::IsResourceExhausted(b.status())) << b.status();
  const std::string msg(b.status().message());
  EXPECT_THAT(msg, HasSubstr("session 5 is over its memory quota on test"));
  EXPECT_THAT(msg, HasSubstr("tried to allocate 600.00 KiB"));
  EXPECT_THAT(msg, HasSubstr("quota is 1.00 MiB"));
  EXPECT_THAT(msg, HasSubstr("already holds 600.00 KiB"));
  EXPECT_EQ(backend_->num_mallocs(), mallocs);
  std::map<std::string, int64_t> stats = alloc_->Stats();
  EXPECT_EQ(stats.at("num_ooms"), 0);
  EXPECT_EQ(stats.at("num_quota_rejections"), 1);
  EXPECT_EQ(stats.at("allocation.all.current"), 1);
  // Other sessions are unaffected; exactly up to the quota is fine.
  alloc_->Free(Alloc(2 * kMiB, 6));
  void* c = Alloc(kMiB - 600 * kKiB, 5);
  EXPECT_EQ(alloc_->SessionBytes(5), int64_t(kMiB));
  alloc_->SetSessionQuota(5, -1);
  void* d = Alloc(600 * kKiB, 5);
  for (void* p : {a, c, d}) alloc_->Free(p);
}

TEST_F(SessionTest, QuotaForcesASplitInsteadOfOvercharging) {
  // 19.25 MiB from a 20 MiB segment leaves 0.75 MiB, normally not split off.
  const size_t request = 19 * kMiB + 256 * kKiB;
  void* free_rider = Alloc(request, 1);
  EXPECT_EQ(alloc_->AllocationSize(free_rider), 20 * kMiB);
  alloc_->Free(free_rider);
  alloc_->SetSessionQuota(2, 19 * kMiB + 512 * kKiB);
  void* p = Alloc(request, 2);
  EXPECT_EQ(p, free_rider);
  EXPECT_EQ(alloc_->AllocationSize(p), request);
  EXPECT_EQ(alloc_->SessionBytes(2), int64_t(request));
  alloc_->Free(p);
}

TEST_F(SessionTest, SessionsOfOneAccountShareItsQuota) {
  constexpr uint64_t kAlice = uint64_t{1} << 63;
  alloc_->JoinAccount(1, kAlice, "user 'alice'");
  alloc_->JoinAccount(2, kAlice, "user 'alice'");
  alloc_->SetSessionQuota(kAlice, 4 * kMiB);
  void* a = Alloc(3 * kMiB, 1);
  absl::StatusOr<void*> b = alloc_->Allocate(2 * kMiB, AllocContext{2});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(), HasSubstr("user 'alice'"));
  EXPECT_THAT(b.status().message(), HasSubstr("quota is 4.00 MiB"));
  EXPECT_THAT(b.status().message(), HasSubstr("already hold 3.00 MiB"));
  // Another user's session is not charged to alice.
  void* c = Alloc(3 * kMiB, 3);
  // Once session 1 frees, session 2 fits; accounting stays per session too.
  alloc_->Free(a);
  void* d = Alloc(2 * kMiB, 2);
  EXPECT_GE(alloc_->SessionBytes(2), int64_t(2 * kMiB));  // the reused block
  EXPECT_EQ(alloc_->SessionBytes(1), 0);
  alloc_->LeaveAccount(2);  // alone again: no quota of its own
  void* e = Alloc(8 * kMiB, 2);
  alloc_->Free(c);
  alloc_->Free(d);
  alloc_->Free(e);
}

TEST_F(SessionTest, ExternalChargesShareTheAccountsQuota) {
  constexpr uint64_t kBob = uint64_t{1} << 62;
  alloc_->JoinAccount(1, kBob, "user 'bob'");
  alloc_->SetSessionQuota(kBob, 4 * kMiB);
  absl::StatusOr<uint64_t> account = alloc_->ChargeExternal(1, 3 * kMiB);
  ASSERT_TRUE(account.ok()) << account.status();
  EXPECT_EQ(*account, kBob);
  EXPECT_EQ(alloc_->SessionBytes(1), 0);  // not allocator memory
  // Allocations and further charges see the 3 MiB held outside.
  absl::StatusOr<void*> b = alloc_->Allocate(2 * kMiB, AllocContext{1});
  ASSERT_TRUE(absl::IsResourceExhausted(b.status())) << b.status();
  EXPECT_THAT(b.status().message(), HasSubstr("already hold 3.00 MiB"));
  absl::StatusOr<uint64_t> more = alloc_->ChargeExternal(1, 2 * kMiB);
  ASSERT_TRUE(absl::IsResourceExhausted(more.status())) << more.status();
  EXPECT_THAT(more.status().message(), HasSubstr("tried to allocate 2.00 MiB"));
  // Uncharged to the account charged, even after the session left it.
  alloc_->LeaveAccount(1);
  alloc_->UnchargeExternal(*account, 3 * kMiB);
  alloc_->JoinAccount(1, kBob, "user 'bob'");
  void* c = Alloc(4 * kMiB, 1);
  alloc_->Free(c);
  // Without a quota a charge always succeeds.
  EXPECT_TRUE(alloc_->ChargeExternal(7, 100 * kMiB).ok());
  alloc_->UnchargeExternal(7, 100 * kMiB);
}

// Note [Session stats]: a session's counters hold its own blocks alone.
TEST_F(SessionTest, SessionStatsCountOnlyTheSessionsOwnBlocks) {
  void* a = Alloc(1000, 1);      // small pool: 1024 bytes
  void* b = Alloc(3 * kMiB, 1);  // large pool
  void* other = Alloc(5 * kMiB, 2);
  SessionStats one = alloc_->SessionStatsOf(1);
  EXPECT_EQ(one.allocated_bytes[kAllPools].current, int64_t(1024 + 3 * kMiB));
  EXPECT_EQ(one.allocated_bytes[kSmallPool].current, 1024);
  EXPECT_EQ(one.allocated_bytes[kLargePool].current, int64_t(3 * kMiB));
  EXPECT_EQ(one.requested_bytes[kAllPools].current, int64_t(1000 + 3 * kMiB));
  EXPECT_EQ(one.allocation[kAllPools].current, 2);
  alloc_->Free(b);
  one = alloc_->SessionStatsOf(1);
  EXPECT_EQ(one.allocated_bytes[kAllPools].current, 1024);
  EXPECT_EQ(one.allocated_bytes[kAllPools].peak, int64_t(1024 + 3 * kMiB));
  EXPECT_EQ(one.allocated_bytes[kAllPools].freed, int64_t(3 * kMiB));
  EXPECT_EQ(one.allocation[kAllPools].current, 1);
  EXPECT_EQ(one.allocated_bytes[kAllPools].current, alloc_->SessionBytes(1));
  EXPECT_EQ(alloc_->SessionStatsOf(2).allocated_bytes[kAllPools].current,
            int64_t(5 * kMiB));
  alloc_->ResetSessionPeaks(1);
  EXPECT_EQ(alloc_->SessionStatsOf(1).allocated_bytes[kAllPools].peak, 1024);
  EXPECT_EQ(alloc_->SessionStatsOf(2).allocated_bytes[kAllPools].peak,
            int64_t(5 * kMiB));  // another session's peak is its own
  // The flat form has torch's keys and nothing of the shared cache.
  const std::map<std::string, int64_t> keys =
      SessionStatsToMap(alloc_->SessionStatsOf(1));
  EXPECT_EQ(keys.at("allocated_bytes.all.current"), 1024);
  EXPECT_EQ(keys.at("allocation.small_pool.peak"), 1);
  EXPECT_EQ(keys.count("reserved_bytes.all.current"), 0u);
  EXPECT_EQ(keys.count("session.2.allocated_bytes"), 0u);
  alloc_->Free(a);
  alloc_->Free(other);
}

TEST_F(SessionTest, SessionStatsCountTheSessionsOomsAndQuotaRejections) {
  alloc_->SetSessionQuota(3, kMiB);
  EXPECT_FALSE(alloc_->Allocate(2 * kMiB, AllocContext{3}).ok());
  EXPECT_FALSE(alloc_->Allocate(512 * kMiB, AllocContext{4}).ok());
  EXPECT_EQ(alloc_->SessionStatsOf(3).num_quota_rejections, 1);
  EXPECT_EQ(alloc_->SessionStatsOf(3).num_ooms, 0);
  EXPECT_EQ(alloc_->SessionStatsOf(4).num_ooms, 1);
  EXPECT_EQ(alloc_->SessionStatsOf(4).num_quota_rejections, 0);
  EXPECT_EQ(alloc_->SessionStatsOf(5).num_ooms, 0);
}

TEST_F(SessionTest, AnEndedSessionsStatsGoWithItsLastBlock) {
  void* a = Alloc(4 * kKiB, 1);
  alloc_->EndSession(1);
  EXPECT_EQ(alloc_->SessionStatsOf(1).allocated_bytes[kAllPools].peak,
            int64_t(4 * kKiB));  // it still holds `a`
  alloc_->Free(a);
  EXPECT_EQ(alloc_->SessionStatsOf(1).allocated_bytes[kAllPools].peak, 0);
  // A live session keeps its counters while it holds nothing, even across
  // an empty_cache; once ended and empty they go at once.
  alloc_->Free(Alloc(4 * kKiB, 2));
  alloc_->EmptyCache();
  EXPECT_EQ(alloc_->SessionStatsOf(2).allocated_bytes[kAllPools].peak,
            int64_t(4 * kKiB));
  alloc_->EndSession(2);
  EXPECT_EQ(alloc_->SessionStatsOf(2).allocated_bytes[kAllPools].peak, 0);
}

}  // namespace
}  // namespace tensord
