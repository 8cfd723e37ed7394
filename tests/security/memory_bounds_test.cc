// Issue 24's "memory outside the quota" attacks that aim at the quota,
// played by a tenant with a 64 MiB quota (memory_bounds_fixture.h): sessions
// that each ask for a shared-memory region (small: no payload), handles and
// autograd nodes that hold no tensor bytes, and readers that stop reading.
// Each is charged to the quota or bounded, measured by the daemon's own
// resident memory (VmRSS in /proc/PID/status), and another tenant's session
// goes on. The text attacks are text_bounds_test.cc's.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/raw_session.h"
#include "tests/security/memory_bounds_fixture.h"

namespace tensord {
namespace {

using testing::kMiB;
using testing::kSanitizerSlack;
using testing::MemoryBoundsTest;
using testing::ResidentBytes;

// Session regions hold the nonce page, the mailbox and the command ring,
// no payload (bytes go through shared buffers, charged as they are made):
// mallory's sessions each get one, small (her region budget is 4 MiB, so
// a 256 KiB ring), and they leave her quota to tensors.
TEST_F(MemoryBoundsTest, SessionRegionsHoldNoPayload) {
  v1::Hello wants_region;
  wants_region.set_shm_transfer(true);
  wants_region.set_command_ring(true);
  std::vector<std::unique_ptr<testing::RawSession>> sessions;
  for (int i = 0; i < 18; ++i) {
    sessions.push_back(std::make_unique<testing::RawSession>(
        address(), "tok-mallory", "attacker", wants_region));
    ASSERT_TRUE(sessions.back()->ok());
    ASSERT_TRUE(sessions.back()->welcome().has_shm());
    const v1::ShmRegion& region = sessions.back()->welcome().shm();
    EXPECT_EQ(region.data_offset(), region.size());
    EXPECT_EQ(region.ring_bytes(), uint64_t{256} << 10);
    EXPECT_EQ(region.size(), 8192 + region.ring_bytes());
  }
  sessions.back()->PutFloats({1 << 20});  // 4 MiB: the quota holds it
  testing::RawSession::Reply reply = sessions.back()->Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(reply.sync_error.code(), 0) << reply.sync_error.message();
  ExpectAliceGoesOn();
}

// Note [Metadata charge]: handles cost the daemon ~700 bytes each whatever
// their tensors hold (here: none, poisoned by calls with 1000 outputs that
// share one error). 2^20 of them once stayed outside the quota; now what is
// past 4 MiB per session is charged to it, so mallory's 64 MiB quota stops
// her near 100 000 handles with RESOURCE_EXHAUSTED saying why; released,
// they give the quota back, and the daemon grew by about the quota only.
TEST_F(MemoryBoundsTest, HandleMetadataIsChargedToTheQuota) {
  const int64_t before = ResidentBytes(daemon_->pid());
  testing::RawSession mallory(address(), "tok-mallory", "attacker");
  ASSERT_TRUE(mallory.ok());
  const uint64_t x = mallory.PutFloats({4});
  ASSERT_TRUE(mallory.Flush().ok);
  std::vector<uint64_t> made;
  std::string refusal;
  for (int round = 0; round < 40 && refusal.empty(); ++round) {
    for (int c = 0; c < 10; ++c) {
      v1::Call* call = AddCall(&mallory, "neg", x, 1000);
      made.insert(made.end(), call->outputs().begin(), call->outputs().end());
    }
    testing::RawSession::Reply reply = mallory.Flush();
    ASSERT_TRUE(reply.ok);
    for (const auto& e : reply.errors) {
      if (e.status().code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        refusal = e.status().message();
      }
    }
  }
  ASSERT_FALSE(refusal.empty()) << made.size() << " handles and no refusal";
  EXPECT_NE(refusal.find("charged to its user's quota"), std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("release handles"), std::string::npos) << refusal;
  EXPECT_LT(made.size(), 130000u);
  const int64_t grown = ResidentBytes(daemon_->pid()) - before;
  EXPECT_LT(grown, 64 * kMiB + 4 * kMiB + 48 * kMiB + kSanitizerSlack) << grown;
  ExpectAliceGoesOn();
  // Released, the handles give the quota back: as many can be made again.
  v1::Release* release = mallory.Add()->mutable_release();
  for (uint64_t h : made) release->add_handles(h);
  ASSERT_TRUE(mallory.Flush().ok);
  for (int c = 0; c < 50; ++c) AddCall(&mallory, "neg", x, 1000);
  testing::RawSession::Reply again = mallory.Flush();
  ASSERT_TRUE(again.ok);
  for (const auto& e : again.errors) ADD_FAILURE() << e.status().message();
  EXPECT_EQ(again.created.size(), 50000u);
}

// Note [Metadata charge]: each autograd node costs the daemon its
// attributes, specs and edges. A chain y = -y from a tensor that requires
// grad keeps every node alive through the last handle alone, so releasing
// the others held nothing back; now the nodes are charged like handles, and
// mallory's 64 MiB quota stops the chain with RESOURCE_EXHAUSTED saying why.
// Released, the chain gives the quota back.
TEST_F(MemoryBoundsTest, AutogradNodesAreChargedToTheQuota) {
  const int64_t before = ResidentBytes(daemon_->pid());
  testing::RawSession mallory(address(), "tok-mallory", "attacker");
  ASSERT_TRUE(mallory.ok());
  auto leaf = [&mallory] {
    const uint64_t id = mallory.NewHandle();
    v1::Put* put = mallory.Add()->mutable_put();
    put->set_handle(id);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(1);
    put->mutable_payload()->set_data(std::string(4, '\0'));
    put->set_last(true);
    put->set_requires_grad(true);
    return id;
  };
  uint64_t last = leaf();
  uint64_t alive = last;  // the chain's newest handle the daemon made
  int64_t nodes = 0;
  std::string refusal;
  for (int round = 0; round < 400 && refusal.empty(); ++round) {
    for (int c = 0; c < 1000; ++c, ++nodes) {
      const uint64_t previous = last;
      last = AddCall(&mallory, "neg", previous, 1)->outputs(0);
      mallory.Add()->mutable_release()->add_handles(previous);
    }
    testing::RawSession::Reply reply = mallory.Flush();
    ASSERT_TRUE(reply.ok);
    if (!reply.created.empty()) alive = reply.created.rbegin()->first;
    for (const auto& e : reply.errors) {
      if (e.status().code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        refusal = e.status().message();
      }
    }
  }
  ASSERT_FALSE(refusal.empty()) << nodes << " nodes and no refusal";
  EXPECT_NE(refusal.find("charged to its user's quota"), std::string::npos)
      << refusal;
  const int64_t grown = ResidentBytes(daemon_->pid()) - before;
  EXPECT_LT(grown, 64 * kMiB + 4 * kMiB + 48 * kMiB + kSanitizerSlack) << grown;
  ExpectAliceGoesOn();
  // The chain released, its nodes give the quota back: a new one grows.
  mallory.Add()->mutable_release()->add_handles(alive);
  ASSERT_TRUE(mallory.Flush().ok);
  last = leaf();
  for (int c = 0; c < 1000; ++c) {
    last = AddCall(&mallory, "neg", last, 1)->outputs(0);
  }
  testing::RawSession::Reply again = mallory.Flush();
  ASSERT_TRUE(again.ok);
  for (const auto& e : again.errors) ADD_FAILURE() << e.status().message();
}

TEST_F(MemoryBoundsTest, StalledReadersHoldABoundedAmount) {
  const int64_t before = ResidentBytes(daemon_->pid());
  // Twelve sessions each download 2 MiB 64 times and never read a reply:
  // 1.5 GiB of replies. Kept for a resume they are charged to the quota
  // (40 MiB left of it), and each stream queues 16 MiB before its writer
  // waits. (Before, each session kept 64 MiB of them outside the quota.)
  std::vector<std::unique_ptr<testing::RawSession>> stalled;
  for (int i = 0; i < 12; ++i) {
    stalled.push_back(std::make_unique<testing::RawSession>(
        address(), "tok-mallory", "staller"));
    testing::RawSession& s = *stalled.back();
    ASSERT_TRUE(s.ok());
    const uint64_t x = s.PutFloats({512 * 1024});  // 2 MiB
    for (int g = 0; g < 64; ++g) {
      v1::Get* get = s.Add()->mutable_get();
      get->set_handle(x);
      get->set_request_id(s.NewRequest());
    }
    ASSERT_TRUE(s.SendPending());  // and never read a reply
  }
  // The other tenant works meanwhile (its rounds pace the samples: no
  // sleeps). The stall builds up (the tensors' 24 MiB, then the replies:
  // before, 64 MiB per session kept for a resume, 768 MiB in all), and the
  // daemon's memory stays within the quota and the per-session bounds
  // (12 x (16 + 9) MiB + the quota).
  int64_t peak = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  int rounds_after_stall = 0;
  while (rounds_after_stall < 20 && absl::Now() < deadline) {
    ExpectAliceGoesOn();
    peak = std::max(peak, ResidentBytes(daemon_->pid()) - before);
    if (peak >= 40 * kMiB) ++rounds_after_stall;
  }
  EXPECT_GE(peak, 40 * kMiB) << "the stalled sessions never held replies";
  EXPECT_LT(peak, 64 * kMiB + 12 * 25 * kMiB + kSanitizerSlack)
      << "peak growth " << peak;
  for (auto& s : stalled) s.reset();  // cancels the streams
  ExpectAliceGoesOn();
}

}  // namespace
}  // namespace tensord
