// Issue 24's "memory outside the quota" attacks made of text, played by a
// tenant with a 64 MiB quota (memory_bounds_fixture.h): huge call sites,
// calls that name a site bound once, poisoned handles whose errors carry
// long text, and an overlong client name. Each is refused or bounded,
// measured by the daemon's own resident memory (VmRSS in /proc/PID/status)
// where the attack aims at it, and another tenant's session goes on. The
// attacks on the quota itself are memory_bounds_test.cc's.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/raw_session.h"
#include "tests/security/memory_bounds_fixture.h"

namespace tensord {
namespace {

using testing::kMiB;
using testing::MemoryBoundsTest;
using testing::ResidentBytes;

TEST_F(MemoryBoundsTest, AHugeCallSiteIsRefusedAndNeverKept) {
  testing::RawSession mallory(address(), "tok-mallory", "attacker");
  ASSERT_TRUE(mallory.ok());
  const uint64_t x = mallory.PutFloats({4});
  // Bind a 1 MiB site to id 1, then name it from calls that fail (each
  // failure once kept its own copy of the site, in its handle and Ack).
  v1::Call* bind = AddCall(&mallory, "neg", x, 1);
  bind->set_site(std::string(kMiB, 's'));
  bind->set_site_id(1);
  const uint64_t bound = bind->outputs(0);
  const int64_t before = ResidentBytes(daemon_->pid());
  testing::RawSession::Reply reply = mallory.Flush();
  ASSERT_TRUE(reply.ok);
  const v1::Status& refused = reply.created[bound].error();
  EXPECT_EQ(refused.code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(absl::StrContains(refused.message(), "Call.site"))
      << refused.message();
  EXPECT_TRUE(absl::StrContains(refused.message(), "1024"))
      << refused.message();
  for (int batch = 0; batch < 8; ++batch) {
    for (int i = 0; i < 64; ++i) {
      AddCall(&mallory, "neg", x, 2)->set_site_id(1);  // 2 outputs: fails
    }
    reply = mallory.Flush();
    ASSERT_TRUE(reply.ok);
    for (const auto& [handle, meta] : reply.created) {
      ASSERT_TRUE(meta.has_error());
      EXPECT_LE(meta.error().site().size(), 1024u);
    }
  }
  // 512 failures that each kept a 1 MiB site would be 512 MiB.
  EXPECT_LT(ResidentBytes(daemon_->pid()) - before, 32 * kMiB);
  ExpectAliceGoesOn();
}

TEST_F(MemoryBoundsTest, BoundSiteTextIsCappedPerSession) {
  testing::RawSession mallory(address(), "tok-mallory", "attacker");
  ASSERT_TRUE(mallory.ok());
  const uint64_t x = mallory.PutFloats({4});
  // 1 KiB sites are allowed, 4 MiB of them in all: the 4097th is refused.
  std::vector<uint64_t> outputs;
  for (int id = 1; id <= 4200; ++id) {
    v1::Call* call = AddCall(&mallory, "neg", x, 1);
    call->set_site(std::string(1024, 'a' + id % 26) + std::to_string(id));
    call->mutable_site()->resize(1024);
    call->set_site_id(id);
    outputs.push_back(call->outputs(0));
    if (id % 500 == 0) {
      ASSERT_TRUE(mallory.Flush().ok);
    }
  }
  testing::RawSession::Reply reply = mallory.Flush();
  ASSERT_TRUE(reply.ok);
  // The last ones (in the final batch) were refused naming the cap.
  const v1::TensorMeta& last = reply.created[outputs.back()];
  ASSERT_TRUE(last.has_error());
  EXPECT_TRUE(absl::StrContains(last.error().message(), "call-site text"))
      << last.error().message();
  ExpectAliceGoesOn();
}

TEST_F(MemoryBoundsTest, PoisonedHandlesWithLongTextKeepTheAckSmall) {
  testing::RawSession mallory(address(), "tok-mallory", "attacker");
  ASSERT_TRUE(mallory.ok());
  const uint64_t x = mallory.PutFloats({4});
  // 12000 failing calls with a 1 KiB site in one batch: their errors in
  // full would make a 12 MB Ack, over the daemon's own send limit (9 MiB),
  // which would break the stream.
  const std::string site(1024, 'p');
  v1::Call* bind = AddCall(&mallory, "neg", x, 1);
  bind->set_site(site);
  bind->set_site_id(1);
  ASSERT_TRUE(mallory.Flush().ok);
  for (int i = 0; i < 12000; ++i) {
    AddCall(&mallory, "neg", x, 2)->set_site_id(1);
  }
  testing::RawSession::Reply reply = mallory.Flush();
  ASSERT_TRUE(reply.ok) << "the Ack broke the stream";
  ASSERT_EQ(reply.created.size(), 24000u);
  int short_form = 0;
  for (const auto& [handle, meta] : reply.created) {
    ASSERT_TRUE(meta.has_error());
    EXPECT_EQ(meta.error().op(), "neg");
    if (meta.error().site().size() < site.size()) ++short_form;
  }
  EXPECT_GT(short_form, 0);
  ExpectAliceGoesOn();
}

// Note [Kept errors]: 3000 failing calls, each with an error of its own
// (a distinct 1000-byte site), once kept ~3 MiB of text for as long as their
// handles lived, 2^20 of them ~3 GiB. Past the session's 1 MiB budget a
// failure keeps a short form that still names the op and starts the reason.
TEST_F(MemoryBoundsTest, KeptErrorTextHasABudgetPerSession) {
  testing::RawSession mallory(address(), "tok-mallory", "attacker");
  ASSERT_TRUE(mallory.ok());
  const uint64_t x = mallory.PutFloats({4});
  ASSERT_TRUE(mallory.Flush().ok);
  uint64_t first = 0, last = 0;
  for (int i = 0; i < 3000; ++i) {
    // neg has one output: two is an error of this call's own.
    v1::Call* call = AddCall(&mallory, "neg", x, 2);
    call->set_site(absl::StrCat(i, std::string(1000, 's')));
    if (first == 0) first = call->outputs(0);
    last = call->outputs(0);
  }
  ASSERT_TRUE(mallory.Flush().ok);
  auto error_of = [&](uint64_t handle) {
    const uint64_t request = mallory.NewRequest();
    v1::Get* get = mallory.Add()->mutable_get();
    get->set_handle(handle);
    get->set_request_id(request);
    testing::RawSession::Reply reply = mallory.Flush();
    EXPECT_TRUE(reply.ok);
    for (const auto& e : reply.errors) {
      if (e.request_id() == request) return e.status();
    }
    ADD_FAILURE() << "no error for handle " << handle;
    return v1::Status();
  };
  const v1::Status early = error_of(first);
  EXPECT_EQ(early.op(), "neg");
  EXPECT_EQ(early.site().size(), 1001u);
  EXPECT_EQ(early.message().find("[shortened"), std::string::npos);
  const v1::Status late = error_of(last);
  EXPECT_EQ(late.op(), "neg");
  EXPECT_EQ(late.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(late.message().find("neg has 1 output"), std::string::npos)
      << late.message();
  EXPECT_NE(late.message().find("[shortened: this session's poisoned handles "
                                "already keep 1024 KiB of error text]"),
            std::string::npos)
      << late.message();
  EXPECT_LE(late.site().size(), 128u);
  ExpectAliceGoesOn();
}

TEST_F(MemoryBoundsTest, AnOverlongClientNameIsRefusedAtHello) {
  testing::RawSession s(address(), "tok-mallory", std::string(300, 'n'));
  EXPECT_FALSE(s.ok());
  const grpc::Status status = s.AwaitEnd();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(status.error_message(), "Hello.client_name"))
      << status.error_message();
  ExpectAliceGoesOn();
}

}  // namespace
}  // namespace tensord
