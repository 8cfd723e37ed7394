// End to end: the real tensord binary over real gRPC on loopback, driven by
// the C++ client. Values are hand-computed; errors must leave the daemon up.
#include <sys/wait.h>

#include <cmath>
#include <numeric>

#include "client/tensord_client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/admin.grpc.pb.h"
#include "proto/tensord.grpc.pb.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

class IntegrationTest : public testing::DaemonSuite {
 protected:
  std::unique_ptr<Client> Connect() {
    ClientOptions options;
    options.address = daemon_->address();
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  v1::ListSessionsResponse Sessions() {
    auto channel = grpc::CreateChannel(daemon_->address(),
                                       grpc::InsecureChannelCredentials());
    auto stub = v1::Admin::NewStub(channel);
    grpc::ClientContext ctx;
    v1::ListSessionsResponse out;
    EXPECT_TRUE(stub->ListSessions(&ctx, {}, &out).ok());
    return out;
  }
};

TEST_F(IntegrationTest, ArithmeticMatchesHandComputedValues) {
  auto c = Connect();
  Tensor a = c->FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = c->FromVector<float>({10, 20, 30}, {3});
  Tensor y = (a + b) * 2.0 - a / 2.0;  // broadcasting and scalars
  // (1+10)*2-0.5 = 21.5, (2+20)*2-1 = 43, (3+30)*2-1.5 = 64.5, ...
  EXPECT_EQ(*y.to_vector<float>(),
            (std::vector<float>{21.5f, 43, 64.5f, 26, 47.5f, 69}));
  Tensor m = a.matmul(a.transpose(0, 1));  // [[14, 32], [32, 77]]
  EXPECT_EQ(*m.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(*m.to_vector<float>(), (std::vector<float>{14, 32, 32, 77}));
  EXPECT_FLOAT_EQ(*a.sum().item<float>(), 21.0f);
  EXPECT_EQ(*a.mean({0}).to_vector<float>(),
            (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(*(-a).relu().sum().item<float>(), 0.0f);
  EXPECT_EQ(*a.reshape({3, -1}).shape(), (std::vector<int64_t>{3, 2}));
}

TEST_F(IntegrationTest, CreationOpsAndSeededRandomness) {
  auto c = Connect();
  auto z = c->Call("zeros", {}, {{"shape", std::vector<int64_t>{2, 2}}});
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(*(*z)[0].to_vector<float>(), std::vector<float>(4, 0.0f));
  auto r = c->Call("arange", {}, {{"end", 5.0}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*(*r)[0].to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
  ASSERT_TRUE(c->manual_seed(123).ok());
  auto x1 = c->Call("randn", {}, {{"shape", std::vector<int64_t>{64}}});
  ASSERT_TRUE(c->manual_seed(123).ok());
  auto x2 = c->Call("randn", {}, {{"shape", std::vector<int64_t>{64}}});
  EXPECT_EQ(*(*x1)[0].to_vector<float>(), *(*x2)[0].to_vector<float>());
}

TEST_F(IntegrationTest, LargeTensorRoundTripIsBitExact) {
  auto c = Connect();
  const size_t n = (80u << 20) / sizeof(float);  // 80 MiB: many chunks
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = std::sin(static_cast<float>(i)) * 1e3f;
  Tensor t = c->FromVector(values, {static_cast<int64_t>(n)});
  auto back = t.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->data(), values.data(), n * sizeof(float)), 0);
  std::vector<double> d = {1e-300, -0.0, 3.14159};
  EXPECT_EQ(*c->FromVector(d, {3}).to_vector<double>(), d);
}

TEST_F(IntegrationTest, ErrorsPoisonValuesNameTheOpAndTheDaemonGoesOn) {
  auto c = Connect();
  Tensor a = c->FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor bad = a.matmul(a);  // [2,3] @ [2,3]
  Tensor downstream = bad.relu() + 1.0;
  Tensor fine = a * 2.0;
  auto v = downstream.to_vector<float>();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("matmul"), std::string::npos)
      << v.status();
  EXPECT_NE(v.status().message().find("integration_test.cc"), std::string::npos)
      << "the call site of the failing op: " << v.status();
  EXPECT_NE(v.status().message().find("cannot be multiplied"),
            std::string::npos);
  EXPECT_FALSE(bad.shape().ok());
  EXPECT_EQ(*fine.sum().item<float>(), 42.0f);
  // synchronize() reports the first error since the last sync.
  EXPECT_FALSE(c->synchronize().ok());
  EXPECT_TRUE(c->synchronize().ok());
  // Unknown ops and bad attributes.
  EXPECT_EQ(c->Call("no_such_op", {a}).status().code(),
            absl::StatusCode::kNotFound);
  auto neg = c->Call("zeros", {}, {{"shape", std::vector<int64_t>{-1}}});
  if (neg.ok()) {
    EXPECT_FALSE((*neg)[0].to_vector<float>().ok());
  }
  // Another session is unaffected.
  auto other = Connect();
  EXPECT_EQ(*other->FromVector<float>({2}, {1}).item<float>(), 2.0f);
  EXPECT_TRUE(daemon_->alive());
}

// A raw Session stream (no client library) that has sent its Hello.
struct RawStream {
  std::unique_ptr<v1::Tensord::Stub> stub;
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::ClientFrame, v1::ServerFrame>>
      stream;
};

std::unique_ptr<RawStream> OpenRaw(const std::string& address,
                                   uint32_t version) {
  auto raw = std::make_unique<RawStream>();
  raw->stub = v1::Tensord::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  raw->stream = raw->stub->Session(&raw->ctx);
  v1::ClientFrame hello;
  hello.mutable_hello()->set_protocol_version(version);
  EXPECT_TRUE(raw->stream->Write(hello));
  return raw;
}

TEST_F(IntegrationTest, WrongProtocolVersionGetsAClearError) {
  auto raw = OpenRaw(daemon_->address(), 7);
  auto& stream = raw->stream;
  stream->WritesDone();
  v1::ServerFrame frame;
  EXPECT_FALSE(stream->Read(&frame));
  grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("version 7"), std::string::npos)
      << status.error_message();
}

TEST_F(IntegrationTest, MalformedFramesAreAnsweredAndTheSessionGoesOn) {
  auto raw = OpenRaw(daemon_->address(), v1::PROTOCOL_VERSION_CURRENT);
  auto& stream = raw->stream;
  v1::ServerFrame frame;
  ASSERT_TRUE(stream->Read(&frame));
  ASSERT_TRUE(frame.has_welcome());
  v1::ClientFrame empty;  // neither hello nor batch
  ASSERT_TRUE(stream->Write(empty));
  ASSERT_TRUE(stream->Read(&frame));
  EXPECT_TRUE(frame.has_error());
  v1::ClientFrame batch;
  v1::Command* cmd = batch.mutable_batch()->add_commands();
  cmd->set_seq(1);  // a command with no kind
  v1::Command* get = batch.mutable_batch()->add_commands();
  get->set_seq(2);
  get->mutable_get()->set_handle(12345);
  get->mutable_get()->set_request_id(9);
  ASSERT_TRUE(stream->Write(batch));
  int errors = 0;
  bool acked = false;
  while ((errors < 2 || !acked) && stream->Read(&frame)) {
    if (frame.has_error()) ++errors;
    if (frame.has_ack()) acked = true;
  }
  EXPECT_EQ(errors, 2);
  EXPECT_TRUE(acked);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(IntegrationTest, ReleasedHandlesLeaveTheDaemonsHandleTable) {
  auto c = Connect();
  auto count = [&] {
    const v1::ListSessionsResponse all = Sessions();
    for (const auto& s : all.sessions()) {
      if (s.session_id() == c->session_id()) return s.live_handles();
    }
    return uint64_t{999};
  };
  ASSERT_TRUE(c->synchronize().ok());
  const uint64_t baseline = count();
  {
    Tensor a = c->FromVector<float>({1, 2, 3}, {3});
    Tensor b = a * 3.0;
    ASSERT_TRUE(c->synchronize().ok());
    EXPECT_GT(count(), baseline);
  }
  ASSERT_TRUE(c->synchronize().ok());
  EXPECT_EQ(count(), baseline);
}

}  // namespace
}  // namespace tensord
