// GetMemoryStats (Note [Session stats]) and NoteFallbacks (Note [Client
// fallbacks]) through the session core: a session reads its own memory and
// nothing of another's; the client's fallbacks reach SessionInfo (tensorctl
// sessions) and the profiler.
#include <string>

#include "gtest/gtest.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

using testing_util::RecordingSink;
using testing_util::SessionTest;

constexpr int64_t kMiB = 1 << 20;

class SessionMemoryTest : public SessionTest {
 protected:
  // Queues a GetMemoryStats after what `b` holds, submits `b` on `session`
  // and returns the answer (SessionMemoryStats or Error) from `sink`.
  v1::ServerFrame Ask(v1::Batch* b, const std::string& device,
                      bool reset_peak = false, Session* session = nullptr,
                      RecordingSink* sink = nullptr) {
    v1::GetMemoryStats* get = Add(b)->mutable_get_memory_stats();
    const uint64_t rid = ++request_;
    get->set_request_id(rid);
    get->set_device(device);
    get->set_reset_peak(reset_peak);
    (session != nullptr ? session : session_.get())->Submit(*b);
    return (sink != nullptr ? sink : sink_.get())
        ->WaitFor([rid](const v1::ServerFrame& f) {
          return (f.has_session_memory_stats() &&
                  f.session_memory_stats().request_id() == rid) ||
                 (f.has_error() && f.error().request_id() == rid);
        });
  }
  v1::ServerFrame Ask(const std::string& device, bool reset_peak = false) {
    v1::Batch b;
    return Ask(&b, device, reset_peak);
  }
  static int64_t Stat(const v1::ServerFrame& f, const std::string& key) {
    const auto& stats = f.session_memory_stats().stats();
    auto it = stats.find(key);
    EXPECT_NE(it, stats.end()) << key;
    return it == stats.end() ? -1 : it->second;
  }
  // Runs `b` and a Sync; returns once the SyncDone arrived.
  void RunAndSync(v1::Batch* b) {
    v1::Sync* sync = Add(b)->mutable_sync();
    const uint64_t rid = ++request_;
    sync->set_request_id(rid);
    session_->Submit(*b);
    sink_->WaitFor([rid](const v1::ServerFrame& f) {
      return f.has_sync_done() && f.sync_done().request_id() == rid;
    });
  }
};

TEST_F(SessionMemoryTest, FiguresFollowTheSessionsOwnTensorsOnly) {
  const v1::ServerFrame w =
      sink_->WaitFor([](auto& f) { return f.has_welcome(); });
  EXPECT_TRUE(w.welcome().memory_stats());  // clients may send both commands
  EXPECT_TRUE(w.welcome().note_fallbacks());
  const v1::ServerFrame before = Ask("");
  ASSERT_TRUE(before.has_session_memory_stats()) << before.DebugString();
  EXPECT_EQ(before.session_memory_stats().device(), "cpu");
  const int64_t base = Stat(before, "allocated_bytes.all.current");

  v1::Batch b;
  Full(&b, 1, {256, 1024}, 1.0);  // 1 MiB of float32
  const v1::ServerFrame held = Ask(&b, "cpu");
  EXPECT_EQ(Stat(held, "allocated_bytes.all.current"), base + kMiB);
  EXPECT_EQ(Stat(held, "allocation.all.current"),
            Stat(before, "allocation.all.current") + 1);
  EXPECT_GE(Stat(held, "allocated_bytes.all.peak"), base + kMiB);

  // A second session's 4 MiB change nothing of the first one's figures.
  auto other_sink = std::make_shared<RecordingSink>();
  v1::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  auto other = manager_.Open(hello, "", "test", other_sink);
  ASSERT_TRUE(other.ok()) << other.status();
  v1::Batch o;
  v1::Command* c = o.add_commands();
  c->set_seq(1);
  v1::Call* call = c->mutable_call();
  call->set_op_id(testing_util::OpId("full"));
  for (int64_t s : {1024, 1024}) {
    (*call->mutable_attrs())["shape"].mutable_ints()->add_values(s);
  }
  (*call->mutable_attrs())["fill_value"].set_f(2.0);
  call->add_outputs(1);
  v1::GetMemoryStats* theirs = o.add_commands()->mutable_get_memory_stats();
  o.mutable_commands(1)->set_seq(2);
  theirs->set_request_id(7);
  (*other)->Submit(o);
  const v1::ServerFrame other_stats =
      other_sink->WaitFor([](auto& f) { return f.has_session_memory_stats(); });
  EXPECT_GE(Stat(other_stats, "allocated_bytes.all.current"), 4 * kMiB);
  const v1::ServerFrame again = Ask("cpu");
  EXPECT_EQ(Stat(again, "allocated_bytes.all.current"), base + kMiB);
  EXPECT_EQ(Stat(again, "allocated_bytes.all.peak"),
            Stat(held, "allocated_bytes.all.peak"));
  // Nothing of the shared cache, no other session's id or count.
  for (const auto& [key, value] : again.session_memory_stats().stats()) {
    EXPECT_EQ(key.find("reserved"), std::string::npos) << key;
    EXPECT_EQ(key.find("segment"), std::string::npos) << key;
    EXPECT_EQ(key.find("session"), std::string::npos) << key;
    EXPECT_EQ(key.find("cached"), std::string::npos) << key;
  }
  (*other)->Close();
  (*other)->WaitDone();

  // Released: back to where it was; the peak stays until reset.
  v1::Batch r;
  Add(&r)->mutable_release()->add_handles(1);
  const v1::ServerFrame released = Ask(&r, "", /*reset_peak=*/true);
  EXPECT_EQ(Stat(released, "allocated_bytes.all.current"), base);
  EXPECT_GE(Stat(released, "allocated_bytes.all.peak"), base + kMiB);
  EXPECT_EQ(Stat(Ask(""), "allocated_bytes.all.peak"), base);
}

TEST_F(SessionMemoryTest, BadDevicesAreAnsweredByRequestAndTheSessionGoesOn) {
  const v1::ServerFrame unknown = Ask("cuda:7");
  ASSERT_TRUE(unknown.has_error()) << unknown.DebugString();
  EXPECT_EQ(unknown.error().status().code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(unknown.error().status().message().find(
                "unknown device 'cuda:7' (this daemon serves: cpu"),
            std::string::npos)
      << unknown.error().status().message();
  const v1::ServerFrame too_long = Ask(std::string(4096, 'd'));
  ASSERT_TRUE(too_long.has_error()) << too_long.DebugString();
  EXPECT_NE(too_long.error().status().message().find(
                "GetMemoryStats.device has 4096 bytes; the limit is 128"),
            std::string::npos)
      << too_long.error().status().message();
  EXPECT_TRUE(Ask("cpu").has_session_memory_stats());
}

TEST_F(SessionMemoryTest, FallbacksReachSessionInfoAndTheProfiler) {
  v1::Batch b;
  auto note = [&](const std::string& op, uint64_t count) {
    v1::FallbackCount* f = Add(&b)->mutable_note_fallbacks()->add_fallbacks();
    f->set_op(op);
    f->set_count(count);
  };
  note("aten.cummax.default", 1);  // before profiling: the session's only
  Add(&b)->mutable_options()->set_profile(true);
  note("aten.cummax.default", 2);
  note("aten.index.Tensor", 1);
  note(std::string(200, 'x'), 1);  // over the limit: refused, not counted
  v1::GetProfile* get = Add(&b)->mutable_get_profile();
  get->set_request_id(++request_);
  RunAndSync(&b);

  const v1::SessionInfo info = session_->Info();
  ASSERT_EQ(info.fallbacks_size(), 2);
  EXPECT_EQ(info.fallbacks().at("aten.cummax.default"), 3u);
  EXPECT_EQ(info.fallbacks().at("aten.index.Tensor"), 1u);
  const v1::ServerFrame profile =
      sink_->WaitFor([](auto& f) { return f.has_profile(); });
  ASSERT_EQ(profile.profile().fallbacks_size(), 2);
  EXPECT_EQ(profile.profile().fallbacks(0).op(), "aten.cummax.default");
  EXPECT_EQ(profile.profile().fallbacks(0).count(), 2u);
  EXPECT_EQ(profile.profile().fallbacks(1).op(), "aten.index.Tensor");
  const v1::ServerFrame refused = sink_->WaitFor(
      [](auto& f) { return f.has_error() && f.error().request_id() == 0; });
  EXPECT_NE(refused.error().status().message().find(
                "NoteFallbacks.fallbacks.op has 200 bytes"),
            std::string::npos)
      << refused.error().status().message();
}

}  // namespace
}  // namespace tensord
