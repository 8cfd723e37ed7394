// Tenants cannot reach each other: foreign handle ids fail cleanly, and
// memory one session wrote and freed reads as zeros in another.
#include "client/tensord_client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/tensord.grpc.pb.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

class IsolationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto d = testing::DaemonProcess::Start();
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() { delete daemon_; }
  std::unique_ptr<Client> Connect(const std::string& name) {
    ClientOptions options;
    options.address = daemon_->address();
    options.client_name = name;
    auto c = Client::Connect(options);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }
  static testing::DaemonProcess* daemon_;
};
testing::DaemonProcess* IsolationTest::daemon_ = nullptr;

TEST_F(IsolationTest, ForeignHandleIdsAllFailCleanly) {
  auto owner = Connect("owner");
  Tensor secret = owner->FromVector<float>({42, 43}, {2});
  ASSERT_TRUE(owner->synchronize().ok());
  const uint64_t id = secret.handle();

  // A raw session names the owner's handle id (and its neighbours) 10^5
  // times: reads, uses as an op input, and releases.
  auto stub = v1::Tensord::NewStub(grpc::CreateChannel(
      daemon_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto stream = stub->Session(&ctx);
  v1::ClientFrame hello;
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  ASSERT_TRUE(stream->Write(hello));
  v1::ServerFrame frame;
  ASSERT_TRUE(stream->Read(&frame));
  uint32_t neg = 0;
  for (const auto& op : frame.welcome().ops()) {
    if (op.name() == "neg") neg = op.id();
  }
  constexpr int kAttempts = 100000, kPerBatch = 1000;
  uint64_t seq = 0, out = 1000000;
  int expected_errors =
      0;  // every Get and every Call fails; releases are no-ops
  for (int b = 0; b < kAttempts / kPerBatch; ++b) {
    v1::ClientFrame batch;
    for (int i = 0; i < kPerBatch; ++i) {
      v1::Command* c = batch.mutable_batch()->add_commands();
      c->set_seq(++seq);
      const uint64_t target = id + (i % 3);  // the owner's id and neighbours
      if (i % 3 != 2) ++expected_errors;
      switch (i % 3) {
        case 0:
          c->mutable_get()->set_handle(target);
          c->mutable_get()->set_request_id(seq);
          break;
        case 1:
          c->mutable_call()->set_op_id(neg);
          c->mutable_call()->add_inputs(target);
          c->mutable_call()->add_outputs(++out);
          break;
        default:
          c->mutable_release()->add_handles(id);
      }
    }
    ASSERT_TRUE(stream->Write(batch));
  }
  v1::ClientFrame sync;
  v1::Command* s = sync.mutable_batch()->add_commands();
  s->set_seq(++seq);
  s->mutable_sync()->set_request_id(seq);
  ASSERT_TRUE(stream->Write(sync));
  int not_found_gets = 0, poisoned_outputs = 0;
  bool synced = false;
  while (!synced && stream->Read(&frame)) {
    if (frame.has_error()) {
      EXPECT_EQ(frame.error().status().code(),
                static_cast<int>(absl::StatusCode::kNotFound));
      ++not_found_gets;
    }
    if (frame.has_ack()) {
      for (const auto& meta : frame.ack().created()) {
        EXPECT_EQ(meta.error().code(),
                  static_cast<int>(absl::StatusCode::kNotFound));
        ++poisoned_outputs;
      }
    }
    if (frame.has_data()) ADD_FAILURE() << "read another session's data";
    synced = frame.has_sync_done();
  }
  EXPECT_TRUE(synced);
  EXPECT_EQ(not_found_gets + poisoned_outputs, expected_errors);
  stream->WritesDone();
  while (stream->Read(&frame)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
  // The owner's tensor is untouched by all of that.
  EXPECT_EQ(*secret.to_vector<float>(), (std::vector<float>{42, 43}));
}

TEST_F(IsolationTest, FreedMemoryReadsAsZerosInAnotherSession) {
  auto writer = Connect("writer");
  auto reader = Connect("reader");
  constexpr int64_t kBytes = 3 << 20;  // a large-pool block, reused as is
  const std::vector<uint8_t> pattern(kBytes, 0xA5);
  for (int round = 0; round < 20; ++round) {
    {
      Tensor t = writer->FromVector(pattern, {kBytes});
      ASSERT_TRUE(writer->synchronize().ok());
    }
    ASSERT_TRUE(writer->synchronize().ok());  // the Release has run
    auto fresh = reader->Call(
        "empty", {},
        {{"shape", std::vector<int64_t>{kBytes}}, {"dtype", DType::kUInt8}});
    ASSERT_TRUE(fresh.ok());
    auto bytes = (*fresh)[0].to_vector<uint8_t>();
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    for (uint8_t b : *bytes) {
      ASSERT_EQ(b, 0) << "round " << round << ": saw another tenant's byte";
    }
  }
}

}  // namespace
}  // namespace tensord
