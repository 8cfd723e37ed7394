// Streams, events and the TF32 option through the session core (no network).
// On the CPU streams and events order nothing (ops run in command order),
// but they are validated exactly as on CUDA, so the whole API is tested
// here; tests/gpu_streams_test.cc checks the ordering itself on a GPU.
#include <string>

#include "gtest/gtest.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

class StreamsTest : public testing_util::SessionTest {
 protected:
  void SetStream(v1::Batch* b, uint32_t id) {
    Add(b)->mutable_options()->set_stream(id);
  }
  void Record(v1::Batch* b, uint64_t event, uint32_t stream,
              const std::string& device = "") {
    v1::RecordEvent* r = Add(b)->mutable_record_event();
    r->set_event(event);
    r->set_stream(stream);
    r->set_device(device);
  }
  void Wait(v1::Batch* b, uint64_t event, uint32_t stream) {
    v1::WaitEvent* w = Add(b)->mutable_wait_event();
    w->set_event(event);
    w->set_stream(stream);
  }
  // Sends a Sync; returns the first error since the previous one.
  v1::Status Sync(bool host_only = false) {
    v1::Batch b;
    const uint64_t rid = ++request_;
    v1::Sync* sync = Add(&b)->mutable_sync();
    sync->set_request_id(rid);
    sync->set_host_only(host_only);
    session_->Submit(b);
    return sink_
        ->WaitFor([&](const v1::ServerFrame& f) {
          return f.has_sync_done() && f.sync_done().request_id() == rid;
        })
        .sync_done()
        .error();
  }
};

TEST_F(StreamsTest, OpsOnTwoStreamsOrderedByEventsGiveTheRightValues) {
  v1::Batch b;
  Full(&b, 1, {4}, 2.0);  // default stream
  Record(&b, 1, 0);
  SetStream(&b, 1);
  Wait(&b, 1, 1);
  Binary(&b, "mul", 1, 1, 2);  // stream 1 reads what stream 0 made
  Record(&b, 2, 1);
  SetStream(&b, 0);
  Wait(&b, 2, 0);
  Binary(&b, "add", 2, 1, 3);  // back on the default stream
  SetStream(&b, 7);
  Binary(&b, "sub", 3, 1, 4);  // another stream, created on first use
  session_->Submit(b);
  EXPECT_EQ(GetFloats(3), std::vector<float>(4, 6.0f));
  EXPECT_EQ(GetFloats(4), std::vector<float>(4, 4.0f));
  EXPECT_EQ(Sync().code(), 0);
}

TEST_F(StreamsTest,
       WaitingOnAnUnrecordedEventIsAClearErrorAndTheSessionGoesOn) {
  v1::Batch b;
  Full(&b, 1, {2}, 1.0);
  Wait(&b, 42, 0);
  Binary(&b, "add", 1, 1, 2);
  session_->Submit(b);
  v1::ServerFrame e = sink_->WaitFor([](auto& f) { return f.has_error(); });
  EXPECT_EQ(e.error().request_id(), 0u);
  EXPECT_EQ(e.error().status().code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(e.error().status().op(), "wait_event");
  EXPECT_NE(e.error().status().message().find("event 42 was never recorded"),
            std::string::npos)
      << e.error().status().message();
  EXPECT_EQ(GetFloats(2), std::vector<float>(2, 2.0f));  // the session goes on
  EXPECT_EQ(Sync().op(), "wait_event");
  EXPECT_EQ(Sync().code(), 0);  // reported once
}

TEST_F(StreamsTest, RecordingAgainMovesTheEventAndBadIdsAreRejected) {
  v1::Batch b;
  Record(&b, 5, 0);
  Record(&b, 5, 3);  // moves it to stream 3
  Wait(&b, 5, 0);
  session_->Submit(b);
  EXPECT_EQ(Sync().code(), 0);

  v1::Batch bad;
  Record(&bad, 0, 0);
  session_->Submit(bad);
  v1::Status s = Sync();
  EXPECT_EQ(s.op(), "record_event");
  EXPECT_NE(s.message().find("non-zero"), std::string::npos) << s.message();

  v1::Batch device;
  Record(&device, 6, 0, "cuda:9");
  session_->Submit(device);
  s = Sync();
  EXPECT_NE(s.message().find("unknown device 'cuda:9'"), std::string::npos)
      << s.message();
}

TEST_F(StreamsTest, AReleasedEventIsForgotten) {
  v1::Batch b;
  Record(&b, 9, 0);
  Add(&b)->mutable_release()->add_events(9);
  Wait(&b, 9, 0);
  session_->Submit(b);
  v1::Status s = Sync();
  EXPECT_NE(s.message().find("event 9 was never recorded"), std::string::npos)
      << s.message();
}

TEST_F(StreamsTest, StreamIdsAreCappedPerSession) {
  v1::Batch b;
  for (uint32_t id = 1; id <= kMaxSessionStreams; ++id) SetStream(&b, id);
  SetStream(&b, 3);  // a known id is always fine
  session_->Submit(b);
  EXPECT_EQ(Sync().code(), 0);
  v1::Batch over;
  SetStream(&over, 1000);
  Full(&over, 1, {1}, 3.0);  // still runs, on the last accepted stream
  session_->Submit(over);
  v1::Status s = Sync();
  EXPECT_EQ(s.op(), "set_stream");
  EXPECT_NE(s.message().find("at most 64 streams"), std::string::npos)
      << s.message();
  EXPECT_EQ(GetFloats(1), std::vector<float>{3.0f});
}

TEST_F(StreamsTest, AllowTf32IsAcceptedAndTheCpuStaysExact) {
  v1::Batch b;
  Add(&b)->mutable_options()->set_allow_tf32(true);
  Full(&b, 1, {2, 3}, 1.0 / 3.0);
  Full(&b, 2, {3, 2}, 3.0);
  Binary(&b, "matmul", 1, 2, 3);
  Add(&b)->mutable_options()->set_allow_tf32(false);
  Binary(&b, "matmul", 1, 2, 4);
  session_->Submit(b);
  const float expected = (1.0f / 3.0f) * 3.0f * 3.0f;
  EXPECT_EQ(GetFloats(3), std::vector<float>(4, expected));
  EXPECT_EQ(GetFloats(4), GetFloats(3));
  EXPECT_EQ(Sync().code(), 0);
}

// What backward() waits for: every earlier command ran (its error is the
// answer's, reported once), without waiting for device streams.
TEST_F(StreamsTest, AHostOnlySyncAnswersAfterEveryEarlierCommand) {
  v1::Batch b;
  Full(&b, 1, {2}, 1.0);
  Full(&b, 2, {3}, 1.0);
  Binary(&b, "add", 1, 2, 3, "bad_add");  // [2] + [3]: fails
  Binary(&b, "add", 1, 1, 4);
  session_->Submit(b);
  const v1::Status first = Sync(/*host_only=*/true);
  EXPECT_EQ(first.op(), "add");
  EXPECT_NE(first.message().find("broadcast"), std::string::npos)
      << first.message();
  EXPECT_EQ(GetFloats(4), std::vector<float>(2, 2.0f));
  EXPECT_EQ(Sync().code(), 0);  // reported once
}

}  // namespace
}  // namespace tensord
