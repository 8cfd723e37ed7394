// Streams, events and TF32 through the C++ client and the real daemon (CPU:
// streams and events order nothing there but are checked as on CUDA).
#include <sys/wait.h>

#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

class StreamsTest : public testing::DaemonSuite {
 protected:
  void SetUp() override {
    ClientOptions options;
    options.address = daemon_->address();
    auto c = Client::Connect(options);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }
  std::unique_ptr<Client> client_;
};

TEST_F(StreamsTest, OpsOnTwoStreamsOrderedByEvents) {
  Tensor a = client_->FromVector<float>({1, 2, 3, 4}, {2, 2});
  ASSERT_TRUE(client_->record_event(1).ok());
  ASSERT_TRUE(client_->set_stream(1).ok());
  ASSERT_TRUE(client_->wait_event(1).ok());
  Tensor m = a.matmul(a);  // [[7, 10], [15, 22]] on stream 1
  ASSERT_TRUE(client_->record_event(2).ok());
  ASSERT_TRUE(client_->set_stream(0).ok());
  ASSERT_TRUE(client_->wait_event(2).ok());
  Tensor s = m.sum();
  EXPECT_FLOAT_EQ(*s.item<float>(), 54.0f);
  EXPECT_TRUE(client_->synchronize().ok());
}

TEST_F(StreamsTest, WaitingOnAnUnrecordedEventFailsTheNextSync) {
  ASSERT_TRUE(client_->wait_event(77).ok());  // batched: no error yet
  absl::Status s = client_->synchronize();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("event 77 was never recorded"), std::string::npos)
      << s;
  Tensor x = client_->FromVector<float>({1, 2}, {2});
  EXPECT_FLOAT_EQ(*(x * 2.0).sum().item<float>(), 6.0f);  // it goes on
  EXPECT_TRUE(client_->synchronize().ok());
}

TEST_F(StreamsTest, AllowTf32IsAcceptedOnTheCpu) {
  ASSERT_TRUE(client_->set_allow_tf32(true).ok());
  Tensor a = client_->FromVector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(*a.matmul(a).to_vector<float>(),
            (std::vector<float>{7, 10, 15, 22}));
  ASSERT_TRUE(client_->set_allow_tf32(false).ok());
  EXPECT_TRUE(client_->synchronize().ok());
}

}  // namespace
}  // namespace tensord
