// Hostile frames against the real daemon: Put chunk sequences that lie
// about their offsets and lengths, impossible and overflowing shapes,
// bad dtypes and devices, reused handle ids, oversized frames and broken
// handshakes. Each gets a clear error, the session (or at least the
// daemon) goes on, and memory returns to its baseline.
#include <cstdlib>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using testing::RawSession;
constexpr char kAdmin[] = "admintoken";

class HostileFramesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string tokens =
        absl::StrCat(std::getenv("TEST_TMPDIR"), "/frames_tokens");
    std::ofstream(tokens) << "attacker atoken quota=64MiB\n"
                          << "ops " << kAdmin << " admin\n";
    auto d = testing::DaemonProcess::Start(
        {"--tokens_file=" + tokens, "--resume_grace=0s"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0);
    delete daemon_;
  }
  static const std::string& address() { return daemon_->address(); }
  static int64_t Allocated() {
    return testing::ReadCpuMemory(address(), kAdmin).allocated;
  }
  static testing::DaemonProcess* daemon_;
};
testing::DaemonProcess* HostileFramesTest::daemon_ = nullptr;

// A Put chunk: handle, dtype, shape, offset, bytes, last.
v1::Put Chunk(uint64_t handle, v1::DType dtype, std::vector<int64_t> shape,
              uint64_t offset, size_t bytes, bool last) {
  v1::Put put;
  put.set_handle(handle);
  put.set_dtype(dtype);
  for (int64_t s : shape) put.add_shape(s);
  put.set_offset(offset);
  put.mutable_payload()->set_data(std::string(bytes, '\x3f'));
  put.set_last(last);
  return put;
}

struct Lie {
  std::string what;
  std::vector<v1::Put> chunks;  // of one handle, filled in below
  int code;
  std::string mention;
};

TEST_F(HostileFramesTest, PutSequencesThatLieArePoisonedAndTheSessionGoesOn) {
  const int64_t baseline = Allocated();
  RawSession s(address(), "atoken");
  ASSERT_TRUE(s.ok());
  const int kInvalid = static_cast<int>(absl::StatusCode::kInvalidArgument);
  const int kExhausted = static_cast<int>(absl::StatusCode::kResourceExhausted);
  const auto F = v1::FLOAT32;
  std::vector<Lie> lies = {
      {"data longer than the shape",
       {Chunk(0, F, {4}, 0, 20, true)},
       kInvalid,
       "carries 20 bytes"},
      {"ends short", {Chunk(0, F, {4}, 0, 8, true)}, kInvalid, "ended after 8"},
      {"a gap between chunks",
       {Chunk(0, F, {4}, 0, 8, false), Chunk(0, F, {}, 12, 4, true)},
       kInvalid,
       "at offset 12"},
      {"an overlap",
       {Chunk(0, F, {4}, 0, 8, false), Chunk(0, F, {}, 4, 8, true)},
       kInvalid,
       "at offset 4"},
      {"chunks past the end",
       {Chunk(0, F, {4}, 0, 8, false), Chunk(0, F, {}, 8, 16, true)},
       kInvalid,
       "does not continue"},
      {"interrupted by another command",
       {Chunk(0, F, {4}, 0, 8, false)},
       kInvalid,
       "interrupted"},
      {"a wrapped number that is not 0-dim",
       {[&] {
         v1::Put put = Chunk(0, F, {4}, 0, 16, true);
         put.set_wrapped_number(true);
         return put;
       }()},
       kInvalid,
       "a wrapped number is 0-dim"},
      {"first chunk not at 0",
       {Chunk(0, F, {4}, 4, 12, true)},
       kInvalid,
       "offset 0"},
      {"negative dimension",
       {Chunk(0, F, {-1, 4}, 0, 0, true)},
       kInvalid,
       "negative"},
      {"size overflows 64 bits",
       {Chunk(0, F, {1LL << 32, 1LL << 32, 16}, 0, 0, true)},
       kInvalid,
       "overflow"},
      {"numel near 2^63",
       {Chunk(0, v1::INT64, {1LL << 61}, 0, 0, true)},
       kInvalid,
       "overflow"},
      {"over the session quota",
       {Chunk(0, F, {1LL << 26}, 0, 0, true)},
       kExhausted,
       "quota"},
      {"no dtype",
       {Chunk(0, v1::DTYPE_UNSPECIFIED, {4}, 0, 0, true)},
       kInvalid,
       "dtype"},
      {"unknown dtype",
       {Chunk(0, static_cast<v1::DType>(99), {4}, 0, 0, true)},
       kInvalid,
       "dtype"},
      {"too many dimensions",
       {Chunk(0, F, std::vector<int64_t>(40, 1), 0, 4, true)},
       kInvalid,
       "dimensions"},
  };
  lies.push_back(
      {"unknown device", {Chunk(0, F, {1}, 0, 4, true)}, kInvalid, "tpu:3"});
  lies.back().chunks[0].set_device("tpu:3");
  std::vector<uint64_t> handles;
  for (Lie& lie : lies) {
    const uint64_t id = s.NewHandle();
    handles.push_back(id);
    for (v1::Put& chunk : lie.chunks) {
      chunk.set_handle(id);
      *s.Add()->mutable_put() = chunk;
    }
  }
  // Reused and zero ids have no handle to carry the error: frame errors.
  *s.Add()->mutable_put() = Chunk(handles[0], F, {1}, 0, 4, true);
  *s.Add()->mutable_put() = Chunk(0, F, {1}, 0, 4, true);
  RawSession::Reply reply = s.Flush();
  ASSERT_TRUE(reply.ok);
  for (size_t i = 0; i < lies.size(); ++i) {
    const v1::Status& e = reply.created[handles[i]].error();
    EXPECT_EQ(e.code(), lies[i].code)
        << lies[i].what << ": " << e.DebugString();
    EXPECT_TRUE(absl::StrContains(e.message(), lies[i].mention))
        << lies[i].what << ": " << e.message();
    EXPECT_EQ(e.op(), "put") << lies[i].what;
  }
  ASSERT_EQ(reply.errors.size(), 2u);
  for (const v1::Error& e : reply.errors) {
    EXPECT_EQ(e.status().code(), kInvalid);
    EXPECT_FALSE(e.status().message().empty());
  }
  // Reading a poisoned upload gives its error; the session still works.
  const uint64_t get = s.NewRequest();
  v1::Get* poisoned = s.Add()->mutable_get();
  poisoned->set_handle(handles[1]);
  poisoned->set_request_id(get);
  v1::Command* good = s.Add();
  *good->mutable_put() = Chunk(s.NewHandle(), F, {2}, 0, 8, true);
  const uint64_t read = s.NewRequest();
  v1::Get* g = s.Add()->mutable_get();
  g->set_handle(good->put().handle());
  g->set_request_id(read);
  reply = s.Flush();
  ASSERT_TRUE(reply.ok);
  ASSERT_EQ(reply.errors.size(), 1u);
  EXPECT_EQ(reply.errors[0].request_id(), get);
  EXPECT_TRUE(
      absl::StrContains(reply.errors[0].status().message(), "ended after 8"));
  EXPECT_EQ(reply.data[read], std::string(8, '\x3f'));
  EXPECT_TRUE(s.Close().ok());
  EXPECT_EQ(Allocated(), baseline);
}

TEST_F(HostileFramesTest, OversizedFrameEndsOnlyThatStream) {
  const int64_t baseline = Allocated();
  RawSession s(address(), "atoken");
  ASSERT_TRUE(s.ok());
  s.PutFloats({1024});  // memory the dropped session must give back
  ASSERT_TRUE(s.Flush().ok);
  v1::ClientFrame huge;
  v1::Command* c = huge.mutable_batch()->add_commands();
  c->set_seq(1000);
  *c->mutable_put() = Chunk(1000, v1::UINT8, {12 << 20}, 0, 12 << 20, true);
  s.WriteRaw(huge);
  const grpc::Status status = s.Close();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  EXPECT_FALSE(status.error_message().empty());
  RawSession other(address(), "atoken");  // the daemon is fine
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other.Flush().ok);
  EXPECT_TRUE(other.Close().ok());
  // With --resume_grace=0s the broken session is released at once; the
  // executor may still be finishing: wait on the counter with a deadline.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (Allocated() != baseline && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Allocated(), baseline);
}

TEST_F(HostileFramesTest, UnparsableFrameEndsOnlyThatStreamWithAClearError) {
  const int64_t baseline = Allocated();
  RawSession s(address(), "atoken");
  ASSERT_TRUE(s.ok());
  s.PutFloats({1024});
  ASSERT_TRUE(s.Flush().ok);
  v1::ClientFrame bad;  // proto3 strings must be UTF-8: this cannot parse
  v1::Command* c = bad.mutable_batch()->add_commands();
  c->set_seq(1000);
  c->mutable_get()->set_site("bad\xff\xfe");
  s.WriteRaw(bad);
  const grpc::Status status = s.Close();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_code() << " " << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "parse"))
      << status.error_message();
  RawSession other(address(), "atoken");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other.Flush().ok);
  EXPECT_TRUE(other.Close().ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (Allocated() != baseline && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Allocated(), baseline);
}

TEST_F(HostileFramesTest, BrokenHandshakesGetTheirOwnCodes) {
  auto open = [&](const v1::ClientFrame& first, const std::string& token) {
    auto channel =
        grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
    auto stub = v1::Tensord::NewStub(channel);
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    auto stream = stub->Session(&ctx);
    stream->Write(first);
    stream->WritesDone();
    v1::ServerFrame frame;
    while (stream->Read(&frame)) {
    }
    return stream->Finish();
  };
  v1::ClientFrame batch_first;
  batch_first.mutable_batch()->add_commands()->mutable_sync();
  grpc::Status s = open(batch_first, "atoken");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "Hello"));
  v1::ClientFrame hello;
  hello.mutable_hello()->set_protocol_version(7);
  s = open(hello, "atoken");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "version 7"));
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  s = open(hello, "wrong-token");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(s.error_message().empty());
  s = open(v1::ClientFrame(), "atoken");  // neither hello nor batch
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A second Hello and an empty frame mid-session: errors, session goes on.
  RawSession raw(address(), "atoken");
  ASSERT_TRUE(raw.ok());
  raw.WriteRaw(hello);
  raw.WriteRaw(v1::ClientFrame());
  raw.Add()->mutable_call()->set_op_id(1u << 30);
  raw.Add();  // a command with no kind
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  ASSERT_EQ(reply.errors.size(), 3u);
  for (const v1::Error& e : reply.errors) {
    EXPECT_EQ(e.status().code(),
              static_cast<int>(absl::StatusCode::kInvalidArgument));
    EXPECT_FALSE(e.status().message().empty());
  }
  EXPECT_EQ(reply.sync_error.code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(raw.Close().ok());
}

}  // namespace
}  // namespace tensord
