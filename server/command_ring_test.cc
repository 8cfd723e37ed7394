// The command ring's reader against a real shared-memory region, written the
// way the Python client's _ring.c writes it, and a whole session fed through
// its ring.
#include "server/command_ring.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/command_ring.h"
#include "proto/mailbox.h"
#include "runtime/core/mutex.h"
#include "server/session_test_fixture.h"

namespace tensord {
namespace {

// The client's side (client/python/tensord/_ring.c's put, without waits:
// these tests never fill the ring past what the reader has consumed).
class RingWriter {
 public:
  explicit RingWriter(const ShmRegion& region)
      : words_(region.ring_control()),
        records_(region.ring_records()),
        size_(region.ring_bytes()) {}

  // Publishes `bytes` as one record (magic as given) and rings the doorbell.
  void PutRaw(const std::string& bytes,
              uint32_t magic = command_ring::kRecordMagic) {
    uint64_t head = words_.head->load();
    uint64_t pos = head & (size_ - 1);
    const uint64_t record = command_ring::RecordBytes(bytes.size());
    if (record > size_ - pos) {
      const uint32_t wrap = command_ring::kWrapMarker;
      std::memcpy(records_ + pos, &wrap, 4);
      head += size_ - pos;
      pos = 0;
    }
    const uint32_t length = static_cast<uint32_t>(bytes.size());
    std::memcpy(records_ + pos, &length, 4);
    std::memcpy(records_ + pos + 4, &magic, 4);
    std::memcpy(records_ + pos + 8, bytes.data(), bytes.size());
    Publish(head + record);
  }
  void Put(const v1::Batch& batch) {
    v1::ClientFrame frame;
    *frame.mutable_batch() = batch;
    PutRaw(frame.SerializeAsString());
  }
  // Publishes `head` as is (a lying client).
  void Publish(uint64_t head) {
    words_.head->store(head);
    if (words_.daemon_idle->load()) {
      words_.doorbell->fetch_add(1);
      mailbox::Wake(words_.doorbell);
    }
  }
  // Waits until the reader consumed everything (the client's rule before a
  // frame goes on the stream), on the `space` futex as _ring.c waits.
  void WaitDrained() {
    while (true) {
      const uint32_t seen = words_.space->load();
      words_.client_waiting->store(1);
      if (tail() == words_.head->load()) break;
      mailbox::Wait(words_.space, seen);
    }
    words_.client_waiting->store(0);
  }
  uint64_t tail() { return words_.tail->load(); }
  uint64_t stream_seq() { return words_.stream_seq->load(); }

 private:
  const command_ring::Control words_;
  char* const records_;
  const uint64_t size_;
};

v1::Batch BatchOf(uint64_t first_seq, int commands, size_t pad = 0) {
  v1::Batch b;
  for (int i = 0; i < commands; ++i) {
    v1::Command* c = b.add_commands();
    c->set_seq(first_seq + i);
    c->mutable_release()->add_handles(1000 + first_seq + i);
  }
  // No Call: Debian's protobuf crashes freeing an arena holding one's attrs
  // map under ThreadSanitizer (Session::Submit says the same).
  if (pad > 0)
    b.mutable_commands(0)->mutable_get()->set_site(std::string(pad, 'x'));
  return b;
}

// Hooks that record what the reader hands over.
class Recorder {
 public:
  CommandRing::Hooks Hooks(bool room = true) {
    CommandRing::Hooks h;
    h.submit = [this, room](std::unique_ptr<google::protobuf::Arena> arena,
                            v1::Batch* batch) {
      MutexLock lock(&mu_);
      seqs_.push_back(batch->commands(0).seq());
      return room;
    };
    h.wait_for_room = [this] {
      MutexLock lock(&mu_);
      ++room_waits_;
    };
    h.fail = [this](absl::Status s) {
      MutexLock lock(&mu_);
      failure_ = std::move(s);
      failed_ = true;
    };
    h.drained = [this] {
      MutexLock lock(&mu_);
      drained_at_ = seqs_.size();
      drained_ = true;
    };
    h.flush_acks = [](uint64_t) { return int64_t{-1}; };
    return h;
  }
  // Waits until `n` batches arrived; returns their first seqs.
  std::vector<uint64_t> WaitForBatches(size_t n) {
    MutexLock lock(&mu_);
    want_ = n;
    mu_.Await(absl::Condition(
        +[](Recorder* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu_) {
          return r->seqs_.size() >= r->want_;
        },
        this));
    return seqs_;
  }
  absl::Status WaitForFailure() {
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&failed_));
    return failure_;
  }
  size_t WaitForDrained() {
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&drained_));
    return drained_at_;
  }
  int room_waits() {
    MutexLock lock(&mu_);
    return room_waits_;
  }

 private:
  Mutex mu_;
  std::vector<uint64_t> seqs_ ABSL_GUARDED_BY(mu_);
  size_t want_ ABSL_GUARDED_BY(mu_) = 0;
  int room_waits_ ABSL_GUARDED_BY(mu_) = 0;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  bool drained_ ABSL_GUARDED_BY(mu_) = false;
  size_t drained_at_ ABSL_GUARDED_BY(mu_) = 0;
};

std::unique_ptr<ShmRegion> RegionWithRing(size_t ring_bytes) {
  auto region = ShmRegion::Create(1 << 20, false, ring_bytes);
  EXPECT_TRUE(region.ok()) << region.status();
  return *std::move(region);
}

TEST(CommandRingTest, HandsOverRecordsInOrderAcrossTheWrap) {
  auto region = RegionWithRing(4096);
  Recorder rec;
  CommandRing ring(region.get(), rec.Hooks(), /*spin_us=*/0);
  RingWriter w(*region);
  std::vector<uint64_t> want;
  // Records of ~700 bytes in a 4 KiB ring: several wraps. Each is consumed
  // before the next is written, as a client waiting for room would.
  for (uint64_t i = 0; i < 20; ++i) {
    const uint64_t seq = 1 + 3 * i;
    w.Put(BatchOf(seq, 3, 600 + 13 * i));
    want.push_back(seq);
    EXPECT_EQ(rec.WaitForBatches(want.size()), want);
  }
  ring.Drain();
  EXPECT_EQ(rec.WaitForDrained(), want.size());
  EXPECT_EQ(ring.frames(), want.size());
}

TEST(CommandRingTest, DrainReadsWhatWasPublishedBeforeIt) {
  auto region = RegionWithRing(64 << 10);
  Recorder rec;
  auto ring = std::make_unique<CommandRing>(region.get(), rec.Hooks(), 0);
  RingWriter w(*region);
  for (uint64_t i = 0; i < 10; ++i) w.Put(BatchOf(1 + i, 1));
  ring->Drain();
  EXPECT_EQ(rec.WaitForDrained(), 10u);
  EXPECT_EQ(w.tail(),
            command_ring::Control(region->ring_control()).head->load());
}

TEST(CommandRingTest, FullQueueMakesTheReaderWaitForRoom) {
  auto region = RegionWithRing(64 << 10);
  Recorder rec;
  CommandRing ring(region.get(), rec.Hooks(/*room=*/false), 0);
  RingWriter w(*region);
  w.Put(BatchOf(1, 1));
  w.Put(BatchOf(2, 1));
  rec.WaitForBatches(2);
  ring.Drain();
  rec.WaitForDrained();
  EXPECT_EQ(rec.room_waits(), 2);
}

TEST(CommandRingTest, StreamBatchesPublishTheirSeq) {
  auto region = RegionWithRing(4096);
  Recorder rec;
  CommandRing ring(region.get(), rec.Hooks(), 0);
  RingWriter w(*region);
  EXPECT_EQ(w.stream_seq(), 0u);
  ring.NoteStreamBatch(42);
  EXPECT_EQ(w.stream_seq(), 42u);
}

struct Malformed {
  const char* name;
  std::function<void(RingWriter&)> write;
  const char* says;
};

TEST(CommandRingTest, MalformedRecordsEndTheSessionSayingWhere) {
  const std::vector<Malformed> cases = {
      {"bad magic", [](RingWriter& w) { w.PutRaw("abc", 0x12345678u); },
       "has magic"},
      {"not protobuf",
       [](RingWriter& w) { w.PutRaw(std::string("\xff\xff\xff\xff", 4)); },
       "could not be parsed as a tensord.v1.ClientFrame"},
      {"a Hello",
       [](RingWriter& w) {
         v1::ClientFrame f;
         f.mutable_hello()->set_client_name("x");
         w.PutRaw(f.SerializeAsString());
       },
       "is not a batch"},
      {"head past the ring", [](RingWriter& w) { w.Publish(1 << 30); },
       "past the published head"},
  };
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.name);
    auto region = RegionWithRing(4096);
    Recorder rec;
    CommandRing ring(region.get(), rec.Hooks(), 0);
    RingWriter w(*region);
    c.write(w);
    const absl::Status s = rec.WaitForFailure();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s;
    EXPECT_NE(s.message().find("command ring: the record at byte 0"),
              std::string::npos)
        << s;
  }
}

TEST(CommandRingTest, LengthOverTheRingIsRefused) {
  auto region = RegionWithRing(4096);
  Recorder rec;
  CommandRing ring(region.get(), rec.Hooks(), 0);
  char* records = region->ring_records();
  const uint32_t length = 1 << 20, magic = command_ring::kRecordMagic;
  std::memcpy(records, &length, 4);
  std::memcpy(records + 4, &magic, 4);
  RingWriter(*region).Publish(64);
  const absl::Status s = rec.WaitForFailure();
  EXPECT_NE(s.message().find("says 1048576 frame bytes"), std::string::npos)
      << s;
}

TEST(CommandRingTest, StopWakesASleepingReader) {
  auto region = RegionWithRing(4096);
  Recorder rec;
  auto ring = std::make_unique<CommandRing>(region.get(), rec.Hooks(), 0);
  ring.reset();  // joins: the test ends only if Stop woke the futex
  SUCCEED();
}

// A whole session fed through its ring: values, order with the stream, and
// Close reading the ring before the session ends. Puts and Gets only (no
// Call: see BatchOf); the Python suites run every op through rings.
class RingSessionTest : public testing_util::SessionTest {
 protected:
  RingSessionTest() {
    v1::Hello hello;
    hello.set_protocol_version(kProtocolVersion);
    hello.set_shm_transfer(true);
    hello.set_command_ring(true);
    auto s = manager_.Open(hello, "", "test", ring_sink_);
    EXPECT_TRUE(s.ok()) << s.status();
    ring_session_ = *s;
  }
  ~RingSessionTest() override {
    ring_session_->Close();
    ring_session_->WaitDone();
  }
  void PutFloats(v1::Batch* b, uint64_t handle, std::vector<float> values) {
    v1::Put* put = Add(b)->mutable_put();
    put->set_handle(handle);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(static_cast<int64_t>(values.size()));
    put->mutable_payload()->set_data(values.data(),
                                     values.size() * sizeof(float));
    put->set_last(true);
  }
  void AddGet(v1::Batch* b, uint64_t handle, uint64_t request_id) {
    v1::Get* get = Add(b)->mutable_get();
    get->set_handle(handle);
    get->set_request_id(request_id);
  }
  // The floats of the answer to `request_id` (the test fails on an error).
  std::vector<float> Answer(uint64_t request_id) {
    v1::ServerFrame f = ring_sink_->WaitFor([&](const v1::ServerFrame& f) {
      return (f.has_data() && f.data().request_id() == request_id) ||
             (f.has_error() && f.error().request_id() == request_id);
    });
    EXPECT_TRUE(f.has_data()) << f.DebugString();
    std::vector<float> got(f.data().payload().data().size() / sizeof(float));
    std::memcpy(got.data(), f.data().payload().data().data(),
                f.data().payload().data().size());
    return got;
  }
  std::shared_ptr<testing_util::RecordingSink> ring_sink_ =
      std::make_shared<testing_util::RecordingSink>();
  std::shared_ptr<Session> ring_session_;
};

TEST_F(RingSessionTest, BatchesFromTheRingAndTheStreamRunInOneOrder) {
  ASSERT_TRUE(ring_session_->has_ring());
  RingWriter w(*ring_session_->shm());
  v1::Batch b;
  PutFloats(&b, 1, {1.5f, 2.25f});
  w.Put(b);
  // The next batch comes on the stream, after the ring drained (the
  // client's rule), then one more through the ring after stream_seq.
  w.WaitDrained();
  v1::Batch s;
  PutFloats(&s, 2, {-4.0f});
  const uint64_t stream_last = seq_;
  ring_session_->Submit(s);
  ring_session_->NoteStreamBatch(stream_last);
  EXPECT_EQ(w.stream_seq(), stream_last);
  v1::Batch g;
  AddGet(&g, 1, 7);
  AddGet(&g, 2, 8);
  w.Put(g);
  EXPECT_EQ(Answer(7), std::vector<float>({1.5f, 2.25f}));
  EXPECT_EQ(Answer(8), std::vector<float>({-4.0f}));
}

TEST_F(RingSessionTest, CloseRunsWhatTheRingHolds) {
  RingWriter w(*ring_session_->shm());
  v1::Batch b;
  PutFloats(&b, 1, {4.0f, 5.0f, 6.0f});
  w.Put(b);
  ring_session_->Close();  // what the stream's end does
  ring_session_->WaitDone();
  // The batch ran before the session ended: its Ack went out.
  ring_sink_->WaitFor([&](const v1::ServerFrame& f) {
    return f.has_ack() && f.ack().last_seq() == seq_;
  });
  EXPECT_TRUE(ring_sink_->ended());
}

TEST_F(RingSessionTest, AMalformedRecordEndsOnlyThatSession) {
  RingWriter w(*ring_session_->shm());
  w.PutRaw("garbage", 0);
  ring_session_->WaitDone();
  ASSERT_TRUE(ring_sink_->ended());
  EXPECT_EQ(ring_sink_->status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ring_sink_->status().message().find("command ring"),
            std::string::npos)
      << ring_sink_->status();
  // The fixture's other session goes on.
  v1::Batch b;
  PutFloats(&b, 1, {3.0f});
  session_->Submit(b);
  EXPECT_EQ(GetFloats(1), std::vector<float>({3.0f}));
}

}  // namespace
}  // namespace tensord
