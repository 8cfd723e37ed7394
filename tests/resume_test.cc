// Session lifetime against the real daemon: a dropped stream detaches the
// session, a resume with id + secret continues it without applying anything
// twice, and an unresumed session's memory is released after the grace
// period.
#include <cstring>

#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/admin.grpc.pb.h"
#include "proto/tensord.grpc.pb.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

using Stream = grpc::ClientReaderWriter<v1::ClientFrame, v1::ServerFrame>;

struct Raw {
  std::unique_ptr<v1::Tensord::Stub> stub;
  grpc::ClientContext ctx;
  std::unique_ptr<Stream> stream;
  v1::Welcome welcome;
};

std::unique_ptr<Raw> Open(const std::string& address, v1::Hello hello) {
  auto raw = std::make_unique<Raw>();
  raw->stub = v1::Tensord::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  raw->stream = raw->stub->Session(&raw->ctx);
  hello.set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  v1::ClientFrame frame;
  *frame.mutable_hello() = hello;
  raw->stream->Write(frame);
  v1::ServerFrame reply;
  if (raw->stream->Read(&reply) && reply.has_welcome()) {
    raw->welcome = reply.welcome();
  }
  return raw;
}

uint32_t OpId(const v1::Welcome& w, const std::string& name) {
  for (const auto& op : w.ops()) {
    if (op.name() == name) return op.id();
  }
  return ~0u;
}

v1::Command PutFloats(uint64_t seq, uint64_t handle, std::vector<float> v) {
  v1::Command c;
  c.set_seq(seq);
  v1::Put* put = c.mutable_put();
  put->set_handle(handle);
  put->set_dtype(v1::FLOAT32);
  put->add_shape(static_cast<int64_t>(v.size()));
  put->mutable_payload()->set_data(v.data(), v.size() * sizeof(float));
  put->set_last(true);
  return c;
}

v1::Command Binary(const v1::Welcome& w, uint64_t seq, const std::string& op,
                   uint64_t a, uint64_t b, uint64_t out) {
  v1::Command c;
  c.set_seq(seq);
  c.mutable_call()->set_op_id(OpId(w, op));
  c.mutable_call()->add_inputs(a);
  c.mutable_call()->add_inputs(b);
  c.mutable_call()->add_outputs(out);
  return c;
}

v1::ClientFrame Batch(std::vector<v1::Command> commands) {
  v1::ClientFrame f;
  for (auto& c : commands) *f.mutable_batch()->add_commands() = c;
  return f;
}

class ResumeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = testing::DaemonProcess::Start({"--insecure", "--resume_grace=1s"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() { delete daemon_; }
  int64_t CpuBytesOf(const std::string& session_id) {
    auto stub = v1::Admin::NewStub(grpc::CreateChannel(
        daemon_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    v1::MemoryStatsResponse out;
    EXPECT_TRUE(stub->MemoryStats(&ctx, {}, &out).ok());
    for (const auto& d : out.devices()) {
      auto it = d.session_bytes().find(session_id);
      if (it != d.session_bytes().end()) return it->second;
    }
    return 0;
  }
  static testing::DaemonProcess* daemon_;
};
testing::DaemonProcess* ResumeTest::daemon_ = nullptr;

TEST_F(ResumeTest, ResumeContinuesAndNothingRunsTwice) {
  auto a = Open(daemon_->address(), {});
  const v1::Welcome w = a->welcome;
  ASSERT_FALSE(w.session_id().empty());
  ASSERT_TRUE(a->stream->Write(
      Batch({PutFloats(1, 1, {1, 2, 3}), Binary(w, 2, "mul", 1, 1, 2)})));
  v1::ServerFrame f;
  ASSERT_TRUE(a->stream->Read(&f));
  ASSERT_TRUE(f.has_ack());
  ASSERT_EQ(f.ack().last_seq(), 2u);
  // A second batch whose Ack the client never reads; then the link drops.
  v1::Command get;
  get.set_seq(4);
  get.mutable_get()->set_handle(3);
  get.mutable_get()->set_request_id(1);
  const v1::ClientFrame second = Batch({Binary(w, 3, "add", 2, 1, 3), get});
  ASSERT_TRUE(a->stream->Write(second));
  a->ctx.TryCancel();
  while (a->stream->Read(&f)) {
  }
  a->stream->Finish();

  v1::Hello wrong;
  wrong.set_resume_session_id(w.session_id());
  wrong.set_resume_secret("not-the-secret");
  auto bad = Open(daemon_->address(), wrong);
  EXPECT_FALSE(bad->stream->Read(&f));
  EXPECT_EQ(bad->stream->Finish().error_code(), grpc::StatusCode::NOT_FOUND);

  v1::Hello resume;
  resume.set_resume_session_id(w.session_id());
  resume.set_resume_secret(w.resume_secret());
  resume.set_resume_received_seq(2);
  auto b = Open(daemon_->address(), resume);
  ASSERT_TRUE(b->welcome.resumed());
  ASSERT_EQ(b->welcome.session_id(), w.session_id());
  // Resend what was not acknowledged; the daemon skips what it applied.
  ASSERT_TRUE(b->stream->Write(second));
  v1::Command sync;
  sync.set_seq(5);
  sync.mutable_sync()->set_request_id(2);
  ASSERT_TRUE(b->stream->Write(Batch({sync})));
  std::string data;
  int errors = 0, acks_for_4 = 0;
  bool synced = false;
  while (!synced && b->stream->Read(&f)) {
    if (f.has_error()) ++errors;
    if (f.has_ack() && f.ack().last_seq() == 4) ++acks_for_4;
    if (f.has_data() && f.data().request_id() == 1 && data.size() < 12) {
      data += f.data().payload().data();
    }
    if (f.has_sync_done()) {
      synced = true;
      EXPECT_EQ(f.sync_done().error().code(), 0)
          << f.sync_done().error().message();
    }
  }
  EXPECT_TRUE(synced);
  EXPECT_EQ(errors, 0) << "a resent command was applied twice";
  EXPECT_EQ(acks_for_4, 1);
  ASSERT_EQ(data.size(), 12u);
  float v[3];
  std::memcpy(v, data.data(), 12);
  EXPECT_EQ(v[0], 2.0f);   // 1*1 + 1
  EXPECT_EQ(v[1], 6.0f);   // 2*2 + 2
  EXPECT_EQ(v[2], 12.0f);  // 3*3 + 3
  b->stream->WritesDone();
  while (b->stream->Read(&f)) {
  }
  EXPECT_TRUE(b->stream->Finish().ok());
}

TEST_F(ResumeTest, UnresumedSessionIsReleasedAfterTheGracePeriod) {
  auto a = Open(daemon_->address(), {});
  std::vector<float> big(1 << 20, 1.0f);  // 4 MiB
  v1::Command put = PutFloats(1, 1, {});
  v1::ClientFrame frame;
  // Upload in 1 MiB chunks.
  const char* raw = reinterpret_cast<const char*>(big.data());
  for (int i = 0; i < 4; ++i) {
    v1::Command c;
    c.set_seq(i + 1);
    v1::Put* p = c.mutable_put();
    p->set_handle(1);
    if (i == 0) {
      p->set_dtype(v1::FLOAT32);
      p->add_shape(1 << 20);
    }
    p->set_offset(static_cast<uint64_t>(i) << 20);
    p->mutable_payload()->set_data(raw + (static_cast<size_t>(i) << 20),
                                   1 << 20);
    p->set_last(i == 3);
    ASSERT_TRUE(a->stream->Write(Batch({c})));
  }
  v1::ServerFrame f;
  for (int acks = 0; acks < 4 && a->stream->Read(&f);) acks += f.has_ack();
  const std::string id = a->welcome.session_id();
  EXPECT_GE(CpuBytesOf(id), 4 << 20);
  const absl::Time dropped = absl::Now();
  a->ctx.TryCancel();
  while (a->stream->Read(&f)) {
  }
  a->stream->Finish();
  // The grace period is 1 s: memory must be back within grace + 1 s.
  while (CpuBytesOf(id) != 0 && absl::Now() - dropped < absl::Seconds(2)) {
    absl::SleepFor(absl::Milliseconds(20));  // polling an Admin counter
  }
  EXPECT_EQ(CpuBytesOf(id), 0);
  EXPECT_LT(absl::Now() - dropped, absl::Seconds(2));
  EXPECT_TRUE(daemon_->alive());
}

}  // namespace
}  // namespace tensord
