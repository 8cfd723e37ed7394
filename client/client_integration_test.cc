// The client against the real daemon: spawns server/tensord on a free port
// (--listen=127.0.0.1:0 --insecure --port_file) and drives it through the
// public API.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "proto/admin.grpc.pb.h"

extern char** environ;

namespace tensord {
namespace {

// One daemon for the whole suite.
class Daemon {
 public:
  Daemon() {
    const char* srcdir = std::getenv("TEST_SRCDIR");
    const char* tmpdir = std::getenv("TEST_TMPDIR");
    const std::string binary =
        absl::StrCat(srcdir ? srcdir : ".", "/tensord/server/tensord");
    const std::string port_file =
        absl::StrCat(tmpdir ? tmpdir : "/tmp", "/tensord_port_", getpid());
    std::remove(port_file.c_str());
    std::string port_flag = "--port_file=" + port_file;
    std::vector<std::string> args = {binary, "--listen=127.0.0.1:0",
                                     "--insecure", port_flag,
                                     "--log_level=warn"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, argv.data(),
                    environ) != 0) {
      pid_ = 0;
      return;
    }
    // Test-only polling for the port file the daemon writes once listening.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        address_ = absl::StrCat("127.0.0.1:", port);
        return;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  ~Daemon() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = 0;
  std::string address_;
};

Daemon* daemon_instance = nullptr;

class ClientIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_instance = new Daemon(); }
  static void TearDownTestSuite() {
    delete daemon_instance;
    daemon_instance = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(daemon_instance->address().empty())
        << "server/tensord did not start";
    ClientOptions options;
    options.address = daemon_instance->address();
    options.client_name = "client_integration_test";
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  std::unique_ptr<Client> client_;
};

TEST_F(ClientIntegrationTest, CatalogHasTheContractOps) {
  for (const char* name : {"zeros", "ones", "empty", "full", "arange", "randn",
                           "rand", "add", "sub", "mul", "div", "neg", "relu",
                           "matmul", "sum", "mean", "reshape", "transpose"}) {
    EXPECT_NE(client_->FindOp(name), nullptr) << name;
  }
  EXPECT_FALSE(client_->session_id().empty());
  EXPECT_FALSE(client_->devices().empty());
}

TEST_F(ClientIntegrationTest, HelloArithmetic) {
  Tensor x = client_->FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor z = (x + x).matmul(ones(*client_, {3, 2}));
  EXPECT_EQ(*z.to_vector<float>(), (std::vector<float>{12, 12, 30, 30}));
  EXPECT_EQ(*z.sum().item<float>(), 84.0f);
  EXPECT_EQ(*z.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(*z.dtype(), DType::kFloat32);
  EXPECT_EQ(*(x * 2.0 - 1.0).to_vector<float>(),
            (std::vector<float>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ((1.0 / x).item<float>().status().code(),
            absl::StatusCode::kInvalidArgument);  // 6 elements: item() fails
}

TEST_F(ClientIntegrationTest, ScalarsAreWrappedNumbers) {
  // Exact in float64 (a float32 0.1 would be off by ~1.5e-9), yet an int64
  // tensor times a double is float32, as in PyTorch.
  Tensor d = client_->FromVector<double>({1, 3}, {2});
  EXPECT_EQ(*(d * 0.1).to_vector<double>(),
            (std::vector<double>{0.1, 3 * 0.1}));
  Tensor i = client_->FromVector<int64_t>({1, 3}, {2});
  EXPECT_EQ(*(i * 0.5).dtype(), DType::kFloat32);
  EXPECT_EQ(*(i * 2).dtype(), DType::kInt64);
}

TEST_F(ClientIntegrationTest, ReductionsAndShapes) {
  Tensor x = client_->FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(*x.sum({1}).to_vector<float>(), (std::vector<float>{6, 15}));
  EXPECT_EQ(*x.sum({0}, true).shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(*x.mean().item<float>(), 3.5f);
  EXPECT_EQ(*x.transpose(0, 1).to_vector<float>(),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(*x.reshape({3, 2}).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(*(-x).relu().sum().item<float>(), 0.0f);
  EXPECT_EQ(*sub(x, x, 2.0).sum().item<float>(), -21.0f);
  EXPECT_EQ(*arange(*client_, 0, 5, 2).to_vector<double>(),
            (std::vector<double>{0, 2, 4}));
  Tensor z64 = zeros(*client_, {2}, TensorOptions().set_dtype(DType::kFloat64));
  EXPECT_EQ(*z64.dtype(), DType::kFloat64);
  EXPECT_EQ(*full(*client_, {2, 2}, 2.5).sum().item<double>(), 10.0);
}

TEST_F(ClientIntegrationTest, ErrorsNameOpAndSite) {
  Tensor a = ones(*client_, {2, 3});
  Tensor bad = a.matmul(a);
  Tensor worse = bad + 1.0;
  absl::Status status = worse.to_vector<float>().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("matmul at client_integration_test.cc:"),
            std::string::npos)
      << status;
  EXPECT_EQ(bad.shape().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(client_->synchronize().ok());
  EXPECT_TRUE(client_->synchronize().ok());
  EXPECT_EQ(*a.sum().item<float>(), 6.0f);  // the session goes on
}

// Note [Packed commands], Note [Packed metas]: the client packs what the
// daemon reads (always, with this daemon), and the values and metadata are
// those of the message encoding (client_fake_server_test runs it without).
TEST_F(ClientIntegrationTest, PackedEncodingKeepsValuesAndMetadata) {
  ClientOptions options;
  options.address = daemon_instance->address();
  absl::StatusOr<std::unique_ptr<Client>> connected = Client::Connect(options);
  ASSERT_TRUE(connected.ok()) << connected.status();
  Client& client = **connected;
  Tensor x = client.FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = client.FromVector<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  ASSERT_TRUE(w.set_requires_grad(true).ok());
  Tensor y = x.matmul(w);  // [[4, 5], [10, 11]]
  Tensor s = (y * y).sum();
  Tensor acc = x;
  for (int i = 0; i < 100; ++i) acc = acc + x;  // 101 x
  Tensor bad = x.matmul(x);
  EXPECT_EQ(*acc.to_vector<float>(),
            (std::vector<float>{101, 202, 303, 404, 505, 606}));
  EXPECT_EQ(*acc.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(*acc.dtype(), DType::kFloat32);
  EXPECT_EQ(*acc.device(), "cpu");
  EXPECT_FALSE(*acc.requires_grad());
  EXPECT_TRUE(*acc.is_leaf());
  EXPECT_EQ(*acc.grad_fn(), "");
  EXPECT_TRUE(*w.requires_grad());
  EXPECT_TRUE(*w.is_leaf());
  EXPECT_TRUE(*y.requires_grad());
  EXPECT_FALSE(*y.is_leaf());
  EXPECT_FALSE(y.grad_fn()->empty());
  EXPECT_EQ(*s.item<float>(), 16.0f + 25 + 100 + 121);
  EXPECT_TRUE(s.shape()->empty());
  EXPECT_EQ(bad.shape().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(client.synchronize().ok());  // bad's error, once
}

// Note [Site ids]: the daemon binds at most 65536 call sites per session;
// calls from lines past those carry their text instead of failing.
TEST_F(ClientIntegrationTest, CallSitesPastTheDaemonsCapStillRun) {
  constexpr int kSites = (1 << 16) + 100;
  Tensor one = ones(*client_, {1});
  Tensor acc = one;
  for (int line = 1; line <= kSites; ++line) {
    auto out = client_->Call("add", {acc, one}, {}, 1, Site("many.cc", line));
    ASSERT_TRUE(out.ok()) << out.status();
    acc = (*out)[0];
  }
  EXPECT_EQ(*acc.item<float>(), static_cast<float>(kSites + 1));
  // A failure past the cap names its line.
  Tensor m = ones(*client_, {2, 3});
  auto bad = client_->Call("matmul", {m, m}, {}, 1, Site("many.cc", 70000));
  ASSERT_TRUE(bad.ok());
  const absl::Status status = (*bad)[0].status();
  EXPECT_NE(status.message().find("many.cc:70000"), std::string::npos)
      << status;
  EXPECT_TRUE(client_->synchronize().code() ==
              absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientIntegrationTest, SeededRandomIsReproducible) {
  ASSERT_TRUE(client_->manual_seed(42).ok());
  std::vector<float> first = *randn(*client_, {16}).to_vector<float>();
  ASSERT_TRUE(client_->manual_seed(42).ok());
  std::vector<float> second = *randn(*client_, {16}).to_vector<float>();
  EXPECT_EQ(first, second);
}

TEST_F(ClientIntegrationTest, MultiChunkRoundTrip) {
  const size_t n = (size_t{9} << 20) / 4 + 7;  // 9 MiB: > max_frame_bytes
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 977);
  Tensor x = client_->FromVector(data, {static_cast<int64_t>(n)});
  absl::StatusOr<std::vector<float>> back = (x * 1).to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == data);
}

// to_vector of big tensors: of T's dtype with the size known (an upload, a
// result after shape()) it downloads straight into the vector; other dtypes
// (bool too: std::vector<bool> packs its bits) and results not known yet
// take Download and convert. Values agree
// with the host's either way.
TEST_F(ClientIntegrationTest, BigVectorsEveryWay) {
  const size_t n = (size_t{3} << 20) / 4 + 11;  // 3 MiB of float32
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 1009) - 500;
  Tensor x = client_->FromVector(data, {static_cast<int64_t>(n)});
  absl::StatusOr<std::vector<float>> same = x.to_vector<float>();
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(*same == data);
  absl::StatusOr<std::vector<double>> wider = x.to_vector<double>();
  ASSERT_TRUE(wider.ok()) << wider.status();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ((*wider)[i], double{data[i]}) << i;
  Tensor y = x * 2.0;
  absl::StatusOr<std::vector<float>> early = y.to_vector<float>();
  ASSERT_TRUE(early.ok()) << early.status();
  ASSERT_TRUE(y.shape().ok());  // now known: the direct path
  absl::StatusOr<std::vector<float>> known = y.to_vector<float>();
  ASSERT_TRUE(known.ok()) << known.status();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ((*early)[i], 2 * data[i]) << i;
    ASSERT_EQ((*known)[i], 2 * data[i]) << i;
  }
  std::vector<int64_t> ints(n);
  for (size_t i = 0; i < n; ++i) ints[i] = static_cast<int64_t>(i % 3) - 1;
  Tensor z = client_->FromVector(ints, {static_cast<int64_t>(n)});
  absl::StatusOr<std::vector<int64_t>> ints_back = z.to_vector<int64_t>();
  ASSERT_TRUE(ints_back.ok()) << ints_back.status();
  EXPECT_TRUE(*ints_back == ints);
  absl::StatusOr<std::vector<float>> floats = z.to_vector<float>();
  ASSERT_TRUE(floats.ok()) << floats.status();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ((*floats)[i], ints[i]) << i;
  absl::StatusOr<std::vector<bool>> flags = z.to_vector<bool>();
  ASSERT_TRUE(flags.ok()) << flags.status();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ((*flags)[i], ints[i] != 0) << i;
  Tensor bad = x.matmul(x.reshape({1, -1}));  // shapes [n] x [1, n]: refused
  EXPECT_FALSE(bad.to_vector<float>().ok());
}

// Set TENSORD_CLIENT_GIB_TEST=1 to run (needs ~5 GiB of memory).
TEST_F(ClientIntegrationTest, OneGiBRoundTrip) {
  if (std::getenv("TENSORD_CLIENT_GIB_TEST") == nullptr) {
    GTEST_SKIP() << "set TENSORD_CLIENT_GIB_TEST=1 for the 1 GiB round trip";
  }
  const size_t n = (size_t{1} << 30) / 4 + 1;
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 4099);
  Tensor x = client_->FromVector(data, {static_cast<int64_t>(n)});
  absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == data);
}

TEST_F(ClientIntegrationTest, KilledSessionFailsCleanly) {
  auto admin = v1::Admin::NewStub(grpc::CreateChannel(
      daemon_instance->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::KillSessionRequest request;
  request.set_session_id(client_->session_id());
  v1::KillSessionResponse response;
  ASSERT_TRUE(admin->KillSession(&context, request, &response).ok());
  absl::Status status = client_->synchronize();
  EXPECT_FALSE(status.ok());
  Tensor x = ones(*client_, {2});  // no crash, no hang
  EXPECT_FALSE(x.to_vector<float>().ok());
}

}  // namespace
}  // namespace tensord
