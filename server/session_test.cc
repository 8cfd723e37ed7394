// The session core driven in process (no network): ordering, poisoning,
// chunked transfers and handle rules. The same core behind real gRPC is
// tested in tests/.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

using testing_util::OpId;
using testing_util::RecordingSink;
using testing_util::SessionTest;

TEST_F(SessionTest, WelcomeCarriesTheCatalog) {
  v1::ServerFrame w = sink_->WaitFor([](auto& f) { return f.has_welcome(); });
  EXPECT_EQ(w.welcome().ops_size(), static_cast<int>(OpTable().size()));
  EXPECT_EQ(w.welcome().devices(0).name(), "cpu");
  EXPECT_EQ(w.welcome().protocol_version(), kProtocolVersion);
}

TEST_F(SessionTest, OpsRunInOrderAndAckCarriesMetadata) {
  v1::Batch b;
  Full(&b, 1, {2, 3}, 1.5);
  Full(&b, 2, {3}, 2.0);
  Binary(&b, "mul", 1, 2, 3);
  session_->Submit(b);
  v1::ServerFrame ack = sink_->WaitFor([](auto& f) { return f.has_ack(); });
  EXPECT_EQ(ack.ack().last_seq(), 3u);
  ASSERT_EQ(ack.ack().created_size(), 3);
  EXPECT_EQ(ack.ack().created(2).shape_size(), 2);
  EXPECT_EQ(ack.ack().created(2).dtype(), v1::FLOAT32);
  EXPECT_EQ(GetFloats(3), std::vector<float>(6, 3.0f));
}

TEST_F(SessionTest, PoisonPropagatesTheOriginalErrorAndOthersStayUsable) {
  v1::Batch b;
  Full(&b, 1, {2, 3}, 1);
  Full(&b, 2, {4}, 1);
  Binary(&b, "add", 1, 2, 3, "train.py:42");  // bad broadcast
  Binary(&b, "mul", 3, 1, 4, "train.py:43");  // consumes the poison
  Binary(&b, "mul", 1, 1, 5);                 // unrelated, fine
  session_->Submit(b);
  EXPECT_TRUE(GetFloats(4).empty());
  EXPECT_EQ(last_error_.op(), "add");
  EXPECT_EQ(last_error_.site(), "train.py:42");
  EXPECT_EQ(last_error_.code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(last_error_.message().find("[2, 3] and [4]"), std::string::npos)
      << last_error_.message();
  EXPECT_EQ(GetFloats(5), std::vector<float>(6, 1.0f));
  // Sync reports the first error since the last sync, once.
  v1::Batch s;
  Add(&s)->mutable_sync()->set_request_id(99);
  session_->Submit(s);
  v1::ServerFrame done =
      sink_->WaitFor([](auto& f) { return f.has_sync_done(); });
  EXPECT_EQ(done.sync_done().error().op(), "add");
}

TEST_F(SessionTest, SiteIdsStandForTheTextTheyWereBoundTo) {
  // Note [Site ids]: id 7 bound to "loop.cc:12" by the first Call, then used
  // alone; the error of a later Call names the bound text.
  v1::Batch b;
  Full(&b, 1, {2, 3}, 1);
  Full(&b, 2, {4}, 1);
  Binary(&b, "mul", 1, 1, 3, "loop.cc:12");
  b.mutable_commands(2)->mutable_call()->set_site_id(7);
  Binary(&b, "add", 1, 2, 4);  // bad broadcast
  b.mutable_commands(3)->mutable_call()->set_site_id(7);
  Binary(&b, "add", 1, 1, 5);  // an id never bound: its own error
  b.mutable_commands(4)->mutable_call()->set_site_id(8);
  Binary(&b, "add", 1, 1, 6);  // unaffected
  b.mutable_commands(5)->mutable_call()->set_site_id(7);
  session_->Submit(b);
  EXPECT_EQ(GetFloats(3), std::vector<float>(6, 1.0f));
  EXPECT_TRUE(GetFloats(4).empty());
  EXPECT_EQ(last_error_.op(), "add");
  EXPECT_EQ(last_error_.site(), "loop.cc:12");
  EXPECT_TRUE(GetFloats(5).empty());
  EXPECT_EQ(last_error_.code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(last_error_.message().find("site id 8 was never bound"),
            std::string::npos)
      << last_error_.message();
  EXPECT_EQ(GetFloats(6), std::vector<float>(6, 2.0f));
}

TEST_F(SessionTest, HandleRulesAreEnforced) {
  v1::Batch b;
  Full(&b, 5, {1}, 1);
  Full(&b, 5, {1}, 2);          // reused id
  Full(&b, 3, {1}, 3);          // below the high-water mark
  Binary(&b, "add", 5, 42, 6);  // unknown input
  session_->Submit(b);
  v1::ServerFrame e = sink_->WaitFor([](auto& f) { return f.has_error(); });
  EXPECT_NE(e.error().status().message().find("already in use"),
            std::string::npos);
  e = sink_->WaitFor([](auto& f) {
    return f.has_error() &&
           f.error().status().message().find("not above") != std::string::npos;
  });
  EXPECT_TRUE(GetFloats(6).empty());
  EXPECT_EQ(last_error_.code(), static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_EQ(GetFloats(5), std::vector<float>{1.0f});  // untouched by the reuse
}

TEST_F(SessionTest, ChunkedPutRoundTripsAndLyingChunksPoison) {
  std::vector<float> values(3 << 18);  // 3 MiB in 1 MiB chunks
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const char* raw = reinterpret_cast<const char*>(values.data());
  const size_t total = values.size() * 4, chunk = 1 << 20;
  v1::Batch b;
  for (size_t off = 0; off < total; off += chunk) {
    v1::Put* put = Add(&b)->mutable_put();
    put->set_handle(1);
    if (off == 0) {
      put->set_dtype(v1::FLOAT32);
      put->add_shape(static_cast<int64_t>(values.size()));
    }
    put->set_offset(off);
    put->mutable_payload()->set_data(raw + off, std::min(chunk, total - off));
    put->set_last(off + chunk >= total);
  }
  // A second upload whose chunk skips bytes.
  v1::Put* p1 = Add(&b)->mutable_put();
  p1->set_handle(2);
  p1->set_dtype(v1::FLOAT32);
  p1->add_shape(4);
  p1->mutable_payload()->set_data(raw, 4);
  v1::Put* p2 = Add(&b)->mutable_put();
  p2->set_handle(2);
  p2->set_offset(8);
  p2->mutable_payload()->set_data(raw, 8);
  p2->set_last(true);
  session_->Submit(b);
  EXPECT_EQ(GetFloats(1), values);
  EXPECT_TRUE(GetFloats(2).empty());
  EXPECT_NE(last_error_.message().find("does not continue"), std::string::npos)
      << last_error_.message();
}

TEST_F(SessionTest, ReleaseFreesMemoryAndCloseReleasesEverything) {
  Allocator* alloc = devices_->cpu()->allocator();
  const uint64_t number = session_->params().number;
  v1::Batch b;
  Full(&b, 1, {1024, 1024}, 1);
  session_->Submit(b);
  sink_->WaitFor([](auto& f) { return f.has_ack(); });
  EXPECT_GE(alloc->SessionBytes(number), 4 << 20);
  v1::Batch r;
  Add(&r)->mutable_release()->add_handles(1);
  Add(&r)->mutable_sync()->set_request_id(7);
  session_->Submit(r);
  sink_->WaitFor([](auto& f) { return f.has_sync_done(); });
  EXPECT_EQ(alloc->SessionBytes(number), 0);
}

TEST(SessionManagerTest, VersionMismatchNamesBothVersions) {
  auto devices = DeviceRegistry::Create();
  auto auth = Authenticator::Insecure();
  SessionManager manager(devices.get(), auth.get());
  v1::Hello hello;
  hello.set_protocol_version(99);
  auto s = manager.Open(hello, "", "test", std::make_shared<RecordingSink>());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("version 99"), std::string::npos);
  EXPECT_NE(
      s.status().message().find(absl::StrCat("version ", kProtocolVersion)),
      std::string::npos)
      << s.status().message();
}

TEST_F(SessionTest, ProfilerTimesEachPhase) {
  // Turned on the way Admin.ProfileSession does (tensorctl profile).
  session_->profiler().SetEnabled(true);
  v1::Batch b;
  Full(&b, 1, {64, 64}, 0.5);
  Full(&b, 2, {3}, 1.0);
  Binary(&b, "matmul", 1, 1, 3, "mm_site");
  Binary(&b, "add", 1, 2, 4, "bad_site");  // 64x64 + 3: fails in inference
  session_->Submit(b);
  ASSERT_EQ(GetFloats(3).size(), 64u * 64u);
  v1::Profile profile;
  session_->profiler().Fill(/*clear=*/true, &profile);
  ASSERT_EQ(profile.ops_size(), 4);
  uint64_t previous_start = 0;
  for (const v1::OpRecord& r : profile.ops()) {
    SCOPED_TRACE(r.op());
    EXPECT_EQ(r.device(), "cpu");
    EXPECT_GE(r.start_ns(), previous_start);
    previous_start = r.start_ns();
    EXPECT_GT(r.wait_ns(), 0u);  // every op was queued before it ran
    EXPECT_LE(r.decode_ns() + r.infer_ns() + r.alloc_ns() + r.kernel_ns(),
              r.wall_ns());
  }
  const v1::OpRecord& mm = profile.ops(2);
  EXPECT_EQ(mm.op(), "matmul");
  EXPECT_EQ(mm.site(), "mm_site");
  EXPECT_GT(mm.kernel_ns(), 0u);
  EXPECT_GT(mm.infer_ns(), 0u);
  EXPECT_GT(mm.alloc_ns(), 0u);
  EXPECT_EQ(mm.bytes_allocated(), 64u * 64u * 4u);
  // Later ops of one batch waited longer: they queued behind the earlier.
  EXPECT_GT(mm.wait_ns(), profile.ops(0).wait_ns());
  // Inference refused the add: nothing was allocated, no kernel ran.
  const v1::OpRecord& bad = profile.ops(3);
  EXPECT_EQ(bad.op(), "add");
  EXPECT_GT(bad.infer_ns(), 0u);
  EXPECT_EQ(bad.alloc_ns(), 0u);
  EXPECT_EQ(bad.kernel_ns(), 0u);
  EXPECT_EQ(bad.bytes_allocated(), 0u);

  session_->profiler().SetEnabled(false);
  v1::Batch after;
  Binary(&after, "add", 2, 2, 5);
  session_->Submit(after);
  ASSERT_EQ(GetFloats(5).size(), 3u);
  v1::Profile none;
  session_->profiler().Fill(/*clear=*/true, &none);
  EXPECT_EQ(none.ops_size(), 0);
}

TEST(OpProfilerTest, AnOpFromAnEarlierPeriodIsNotKept) {
  // An op that started while profiling was on and ends after a STOP (or a
  // STOP and a new START) must not show up in the next period's records.
  OpProfiler profiler;
  profiler.SetEnabled(true);
  const uint64_t first = profiler.generation();
  v1::OpRecord record;
  record.set_op("matmul");
  profiler.SetEnabled(false);
  profiler.Record(record, first);
  profiler.SetEnabled(true);
  profiler.Record(record, first);
  v1::Profile none;
  profiler.Fill(/*clear=*/true, &none);
  EXPECT_EQ(none.ops_size(), 0);
  profiler.Record(record, profiler.generation());
  v1::Profile one;
  profiler.Fill(/*clear=*/false, &one);
  EXPECT_EQ(one.ops_size(), 1);
}

}  // namespace
}  // namespace tensord
