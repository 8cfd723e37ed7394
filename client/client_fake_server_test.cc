// The whole client against client/fake_tensord.h: handshake, batching,
// chunked uploads and downloads, errors carried by values, releases.
#include <cstdlib>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/fake_tensord.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"

namespace tensord {
namespace {

using ::tensord::testing::FakeOptions;
using ::tensord::testing::FakeStats;
using ::tensord::testing::FakeTensord;

std::unique_ptr<Client> ConnectTo(const FakeTensord& server,
                                  ClientOptions options = {}) {
  options.address = server.address();
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

void ExpectNoViolations(const FakeTensord& server) {
  FakeStats stats = server.stats();
  for (const std::string& v : stats.violations) ADD_FAILURE() << v;
}

TEST(ClientTest, HandshakeStoresWelcome) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->session_id(), "fake-session-1");
  ASSERT_EQ(client->devices().size(), 1u);
  EXPECT_EQ(client->devices()[0].name(), "cpu");
  ASSERT_NE(client->FindOp("matmul"), nullptr);
  EXPECT_EQ(client->FindOp("no_such_op"), nullptr);
}

TEST(ClientTest, BadTokenIsUnauthenticated) {
  FakeTensord server(FakeOptions{"secret"});
  ClientOptions options;
  options.address = server.address();
  options.token = "wrong";
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(client.status().message().find("invalid token"), std::string::npos);
  options.token = "secret";
  EXPECT_TRUE(Client::Connect(options).ok());
}

TEST(ClientTest, NoDaemonIsUnavailable) {
  ClientOptions options;
  options.address = "127.0.0.1:1";
  options.connect_timeout = absl::Milliseconds(300);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(client.status().message().find("cannot reach tensord at "
                                           "127.0.0.1:1"),
            std::string::npos);
}

TEST(ClientTest, SilentDaemonTimesOut) {
  FakeOptions fake;
  fake.silent = true;
  FakeTensord server(fake);
  ClientOptions options;
  options.address = server.address();
  // Long enough for the TCP connection on a loaded machine (else the
  // status is Unavailable): the Hello is what must time out.
  options.connect_timeout = absl::Seconds(2);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kDeadlineExceeded)
      << client.status();
}

TEST(ClientTest, AddMatmulSum) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  Tensor x = client->FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = x + x;                            // [[2,4,6],[8,10,12]]
  Tensor z = y.matmul(ones(*client, {3, 2}));  // [[12,12],[30,30]]
  EXPECT_EQ(*z.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(*z.to_vector<float>(), (std::vector<float>{12, 12, 30, 30}));
  EXPECT_EQ(*z.sum().item<float>(), 84.0f);
  EXPECT_EQ(*(z * 0.5).to_vector<double>(),
            (std::vector<double>{6, 6, 15, 15}));
  EXPECT_EQ(*(2 - x).to_vector<float>(),
            (std::vector<float>{1, 0, -1, -2, -3, -4}));
  EXPECT_EQ(*(-x).relu().sum().item<int64_t>(), 0);
  EXPECT_EQ(*(x * 2).dtype(), DType::kFloat32);  // int scalar: no promotion
  EXPECT_EQ(*full(*client, {2}, 7.5).to_vector<double>(),
            (std::vector<double>{7.5, 7.5}));
  EXPECT_EQ(*arange(*client, 1, 4).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(*add(x, x, 2.0).to_vector<float>(),
            (std::vector<float>{3, 6, 9, 12, 15, 18}));
  EXPECT_TRUE(client->synchronize().ok());
  ExpectNoViolations(server);
}

TEST(ClientTest, OpsAreBatchedUntilASyncPoint) {
  FakeTensord server;
  ClientOptions options;
  options.batch_delay = absl::Seconds(30);  // only sync points send
  std::unique_ptr<Client> client = ConnectTo(server, options);
  Tensor acc = client->FromVector<float>({0}, {});
  for (int i = 0; i < 200; ++i) acc = acc + 1.0;
  EXPECT_EQ(server.stats().frames, 0);  // nothing sent yet
  EXPECT_EQ(*acc.item<float>(), 200.0f);
  FakeStats stats = server.stats();
  EXPECT_EQ(stats.frames, 1);  // 1 put + 200 * (put + add) + get + releases
  EXPECT_GE(stats.commands, 402);
  ExpectNoViolations(server);
}

// Note [Packed commands]: Calls without attributes or a new call site, and
// Releases, go as packed entries when the daemon reads them, as messages
// otherwise; the values are the same either way.
TEST(ClientTest, PacksCallsAndReleasesOnlyWhereTheDaemonReadsThem) {
  for (bool daemon : {true, false}) {
    SCOPED_TRACE(absl::StrCat("daemon reads packed: ", daemon));
    FakeOptions fake;
    fake.packed_commands = daemon;
    FakeTensord server(fake);
    std::unique_ptr<Client> client = ConnectTo(server);
    Tensor x = client->FromVector<float>({1, 2}, {2});
    Tensor acc = x;
    for (int i = 0; i < 50; ++i) acc = acc + x;
    EXPECT_EQ(*acc.to_vector<float>(), (std::vector<float>{51, 102}));
    const FakeStats stats = server.stats();
    if (daemon) {
      // 49 adds (the first binds its call site: a message) and 49 Releases
      // of the intermediate sums.
      EXPECT_GE(stats.packed, 98);
    } else {
      EXPECT_EQ(stats.packed, 0);
    }
    ExpectNoViolations(server);
  }
}

TEST(ClientTest, TimerFlushesWithoutASyncPoint) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);  // 2 ms timer
  Tensor x = ones(*client, {2});
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (server.stats().frames == 0 && absl::Now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // test only
  }
  EXPECT_GE(server.stats().frames, 1);
}

TEST(ClientTest, CountThresholdFlushes) {
  FakeTensord server;
  ClientOptions options;
  options.batch_delay = absl::Seconds(30);
  options.batch_max_commands = 10;
  std::unique_ptr<Client> client = ConnectTo(server, options);
  std::vector<Tensor> keep;
  for (int i = 0; i < 25; ++i) keep.push_back(ones(*client, {1}));
  ASSERT_TRUE(client->synchronize().ok());
  FakeStats stats = server.stats();
  EXPECT_EQ(stats.frames, 3);  // 10 + 10 + (5 + the sync)
  EXPECT_EQ(stats.max_frame_commands, 10);
}

TEST(ClientTest, ErrorsStayWithValues) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  Tensor a = ones(*client, {2, 3});
  Tensor bad = a.matmul(a);  // 2x3 @ 2x3
  Tensor worse = (bad + 1.0).relu();
  Tensor fine = a.sum();
  EXPECT_EQ(*fine.item<float>(), 6.0f);  // the session goes on

  absl::Status status = worse.to_vector<float>().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  // The original op and its call site, not the op that read it.
  EXPECT_NE(status.message().find("matmul at client_fake_server_test.cc:"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("[2, 3] and [2, 3] cannot be multiplied"),
            std::string::npos);
  EXPECT_EQ(bad.shape().status(), status);
  EXPECT_EQ(client->synchronize(), status);  // first error since last sync
  EXPECT_TRUE(client->synchronize().ok());
}

TEST(ClientTest, LocalErrors) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  Tensor a = ones(*client, {2});
  absl::StatusOr<std::vector<Tensor>> r = client->Call("frobnicate", {a});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->Call("add", {a}).status().code(),
            absl::StatusCode::kInvalidArgument);  // arity
  EXPECT_EQ(client->Call("sum", {a}, {{"axis", 0}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // attribute
  // A local error travels like a poisoned handle.
  Tensor bad = client->FromVector<float>({1, 2, 3}, {2});  // size mismatch
  Tensor worse = bad + a;
  EXPECT_EQ(worse.to_vector<float>().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor().shape().status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((Tensor() + a).status().code(), absl::StatusCode::kInvalidArgument);
  ExpectNoViolations(server);
}

TEST(ClientTest, ChunkedUploadAndDownload) {
  FakeOptions fake;
  fake.chunk_bytes = 64;  // 4000 bytes -> 63 chunks each way
  FakeTensord server(fake);
  std::unique_ptr<Client> client = ConnectTo(server);
  std::vector<float> data(1000);
  for (int i = 0; i < 1000; ++i) data[i] = i * 0.5f;
  Tensor x = client->FromVector(data, {10, 100});
  Tensor other = ones(*client, {3});  // concurrent-ish command after the put
  EXPECT_EQ(*x.to_vector<float>(), data);
  EXPECT_EQ(*other.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  ExpectNoViolations(server);
}

TEST(ClientTest, ManyThreadsKeepHandlesAndChunksOrdered) {
  FakeOptions fake;
  fake.chunk_bytes = 256;
  FakeTensord server(fake);
  std::unique_ptr<Client> client = ConnectTo(server);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&client, t] {
      for (int i = 0; i < 20; ++i) {
        std::vector<double> v(100, t + i);
        Tensor x = client->FromVector(v, {100});
        EXPECT_EQ(*(x * 2).sum().item<double>(), 200.0 * (t + i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ExpectNoViolations(server);
}

TEST(ClientTest, DestructorsRelease) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  uint64_t handle;
  {
    Tensor x = ones(*client, {4});
    Tensor copy = x;  // shared: one release, when the last copy goes
    handle = x.handle();
  }
  ASSERT_TRUE(client->synchronize().ok());
  EXPECT_EQ(server.stats().released.count(handle), 1u);
}

TEST(ClientTest, ManualSeedIsSent) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  ASSERT_TRUE(client->manual_seed(1234).ok());
  ASSERT_TRUE(client->synchronize().ok());
  EXPECT_EQ(server.stats().last_seed, 1234u);
}

TEST(ClientTest, TensorsOutlivingTheClientFailCleanly) {
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  Tensor x = ones(*client, {2});
  Tensor y = x + x;
  client.reset();
  EXPECT_EQ(y.to_vector<float>().status().code(),
            absl::StatusCode::kFailedPrecondition);
  Tensor z = y + y;  // no crash; carries the error
  EXPECT_FALSE(z.status().ok());
}

// Frames stay under max_frame_bytes with megabyte chunks (64 MiB here; set
// TENSORD_CLIENT_GIB_TEST=1 for the 1 GiB version).
TEST(ClientTest, LargeTensorRoundTrip) {
  const bool gib = std::getenv("TENSORD_CLIENT_GIB_TEST") != nullptr;
  const size_t n = (gib ? (size_t{1} << 30) : (size_t{64} << 20)) / 4 + 3;
  FakeTensord server;
  std::unique_ptr<Client> client = ConnectTo(server);
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i % 1000);
  Tensor x = client->FromVector(data, {static_cast<int64_t>(n)});
  absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == data);
  FakeStats stats = server.stats();
  EXPECT_LE(stats.max_frame_bytes, size_t{8} << 20);
  ExpectNoViolations(server);
}

}  // namespace
}  // namespace tensord
