// The C++ client's same-host transfer (docs/protocol.md "Shared memory")
// against the real daemon over gRPC loopback: tensors of several sizes,
// including ones larger than the whole region, round-trip byte for byte;
// without a region (--shm_bytes=0) or with ClientOptions::shm = kOff the
// stream carries them instead. Transfers of 1 MiB or more from and into
// plain memory go by cross-memory attach (docs/protocol.md "Cross-memory
// attach") unless ClientOptions::cma is false or the daemon runs --cma=false.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "client/session.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

// A deterministic byte pattern that differs between tensors and offsets.
std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

std::unique_ptr<Client> Connect(const std::string& address,
                                ClientOptions::ShmMode shm, bool cma = false) {
  ClientOptions options;
  options.address = address;
  options.shm = shm;
  options.cma = cma;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// Uploads `n` bytes as uint8, downloads them (the size known from the Ack)
// and a computed copy (size not yet known: the first answer tells it).
void RoundTrip(Client& client, size_t n, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << n << " bytes");
  const std::vector<uint8_t> bytes = Pattern(n, seed);
  Tensor t =
      client.Upload(bytes.data(), DType::kUInt8, {static_cast<int64_t>(n)});
  ASSERT_TRUE(client.synchronize().ok());
  absl::StatusOr<HostTensor> back = t.Download();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype, DType::kUInt8);
  EXPECT_EQ(back->shape, std::vector<int64_t>{static_cast<int64_t>(n)});
  ASSERT_EQ(back->bytes.size(), n);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(),
                         reinterpret_cast<const uint8_t*>(back->bytes.data())));
  // Into the caller's buffer: exactly its bytes, the rest untouched; a
  // buffer one byte short is an error that writes nothing.
  std::vector<uint8_t> into(n + 1, 0xEE);
  absl::StatusOr<size_t> wrote = t.DownloadInto(into.data(), into.size());
  ASSERT_TRUE(wrote.ok()) << wrote.status();
  EXPECT_EQ(*wrote, n);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), into.begin()));
  EXPECT_EQ(into[n], 0xEE);
  if (n > 0) {
    std::vector<uint8_t> short_buffer(n - 1, 0xEE);
    absl::StatusOr<size_t> refused =
        t.DownloadInto(short_buffer.data(), short_buffer.size());
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("destination holds"),
              std::string::npos)
        << refused.status();
    EXPECT_TRUE(std::all_of(short_buffer.begin(), short_buffer.end(),
                            [](uint8_t b) { return b == 0xEE; }));
  }
  // Computed on the daemon, downloaded before its Ack can have arrived.
  auto doubled = client.Call("add", {t, t});
  ASSERT_TRUE(doubled.ok()) << doubled.status();
  absl::StatusOr<HostTensor> sum = (*doubled)[0].Download();
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(sum->bytes.size(), n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t want = static_cast<uint8_t>(bytes[i] * 2);
    if (static_cast<uint8_t>(sum->bytes[i]) != want) {
      ADD_FAILURE() << "byte " << i << " of the sum";
      break;
    }
  }
}

// A small --shm_bytes: the local transport's bytes go through shared
// buffers (the staging buffer), not the region, so it changes nothing.
constexpr size_t kRegionBytes = (size_t{4} << 20) + 4096;

std::vector<size_t> Sizes() {
  return {0,
          1,
          (256 << 10) - 1,  // just under LocalTransport::kMinBytes: the stream
          256 << 10,
          (1 << 20) - 1,
          1 << 20,
          (1 << 20) + 1,
          (4 << 20) + 12345,  // more than --shm_bytes
          (11 << 20) + 7};
}

TEST(ShmTransferTest, RoundTripsThroughTheRegion) {
  auto daemon = testing::DaemonProcess::Start(
      {"--insecure", "--shm_bytes=" + std::to_string(kRegionBytes)});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Connect((*daemon)->address(), ClientOptions::ShmMode::kAuto);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->shm_active());
  EXPECT_FALSE(client->cma_active());  // ClientOptions::cma false
  uint32_t seed = 1;
  for (size_t n : Sizes()) RoundTrip(*client, n, seed++);
  // float32 values survive too.
  std::vector<float> f((size_t{3} << 20) / 4 + 5);
  for (size_t i = 0; i < f.size(); ++i) f[i] = 0.5f * static_cast<float>(i);
  Tensor x = client->FromVector(f, {static_cast<int64_t>(f.size())});
  absl::StatusOr<std::vector<float>> back = x.to_vector<float>();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, f);
}

TEST(ShmTransferTest, RoundTripsByCrossMemoryAttach) {
  auto daemon = testing::DaemonProcess::Start(
      {"--insecure", "--shm_bytes=" + std::to_string(kRegionBytes)});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Connect((*daemon)->address(), ClientOptions::ShmMode::kAuto,
                        /*cma=*/true);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->shm_active());
  ASSERT_TRUE(client->cma_active());  // the probe worked
  // A forked child holding the session must not use it: the daemon would
  // read and write the parent.
  const pid_t child = fork();
  if (child == 0) _exit(client->cma_active() ? 1 : 0);
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  uint32_t seed = 20;
  for (size_t n : Sizes()) RoundTrip(*client, n, seed++);
  // Larger than --shm_bytes, in one Put and one Get.
  std::vector<float> f((size_t{9} << 20) / 4 + 3);
  for (size_t i = 0; i < f.size(); ++i) f[i] = 0.25f * static_cast<float>(i);
  Tensor x = client->FromVector(f, {static_cast<int64_t>(f.size())});
  std::vector<float> into(f.size(), -1.0f);
  absl::StatusOr<size_t> wrote =
      (x * 2.0f).DownloadInto(into.data(), into.size() * sizeof(float));
  ASSERT_TRUE(wrote.ok()) << wrote.status();
  for (size_t i = 0; i < f.size(); ++i) {
    if (into[i] != 2.0f * f[i]) {
      ADD_FAILURE() << "element " << i << ": " << into[i];
      break;
    }
  }
}

TEST(ShmTransferTest, DaemonWithoutCrossMemoryAttachUsesTheRegion) {
  auto daemon = testing::DaemonProcess::Start(
      {"--insecure", "--cma=false",
       "--shm_bytes=" + std::to_string(kRegionBytes)});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Connect((*daemon)->address(), ClientOptions::ShmMode::kAuto,
                        /*cma=*/true);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->shm_active());
  EXPECT_FALSE(client->cma_active());
  RoundTrip(*client, (size_t{2} << 20) + 5, 90);
}

TEST(ShmTransferTest, ErrorsAndConcurrentTransfersKeepStagingConsistent) {
  auto daemon = testing::DaemonProcess::Start(
      {"--insecure", "--shm_bytes=" + std::to_string(kRegionBytes)});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  for (bool cma : {false, true}) {
    SCOPED_TRACE(cma ? "cross-memory attach" : "region");
    auto client =
        Connect((*daemon)->address(), ClientOptions::ShmMode::kOn, cma);
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(client->shm_active());
    EXPECT_EQ(client->cma_active(), cma);
    // A poisoned handle's download fails with its error, through shm too.
    std::vector<float> big((size_t{2} << 20) / 4, 1.0f);
    Tensor a = client->FromVector(big, {static_cast<int64_t>(big.size())});
    Tensor b = client->FromVector<float>({1, 2, 3}, {3});
    Tensor bad = a.matmul(b);
    EXPECT_FALSE(bad.Download().ok());
    EXPECT_FALSE(client->synchronize().ok());  // reports the matmul error
    // Four threads transfer at once; each round-trips its own bytes.
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&client, i] {
        for (int round = 0; round < 3; ++round) {
          const std::vector<uint8_t> bytes =
              Pattern((size_t{3} << 20) + 1000 * i, 100 + 10 * i + round);
          Tensor t = client->Upload(bytes.data(), DType::kUInt8,
                                    {static_cast<int64_t>(bytes.size())});
          absl::StatusOr<HostTensor> back = t.Download();
          ASSERT_TRUE(back.ok()) << back.status();
          EXPECT_TRUE(back->bytes == std::string(bytes.begin(), bytes.end()))
              << "thread " << i << " round " << round;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    absl::StatusOr<std::vector<float>> again = a.to_vector<float>();
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, big);
  }
}

// Note the mailbox (proto/mailbox.h): a result's first shm Get is answered
// in the region's mailbox too, and the waiting thread wakes on its futex.
TEST(ShmTransferTest, SmallResultsAreAnsweredInTheMailbox) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Connect((*daemon)->address(), ClientOptions::ShmMode::kOn);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->shm_active());
  const auto& session = client->internal_session();
  Tensor x = client->FromVector<float>({1.5f, -2.0f}, {2});
  const uint64_t before = session->transport().mailbox_answers();
  for (int i = 0; i < 50; ++i) {
    // A fresh result: its size is not known yet, so it is asked through the
    // staging buffer (the Ack has not arrived).
    absl::StatusOr<float> v = (x.sum() * static_cast<double>(i)).item<float>();
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(*v, -0.5f * static_cast<float>(i));
  }
  // A few may see an Ack.
  EXPECT_GE(session->transport().mailbox_answers(), before + 40);
  // An error answers on the stream only: the reader wakes the waiter.
  Tensor bad = x.matmul(client->FromVector<float>({1, 2, 3}, {3}));
  absl::StatusOr<float> refused = bad.item<float>();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("matmul"), std::string::npos)
      << refused.status();
  EXPECT_FALSE(client->synchronize().ok());  // the matmul's error, reported
  // Threads take turns on the mailbox (one notify Get at a time).
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&client, t] {
      Tensor base = client->FromVector<float>({static_cast<float>(t)}, {1});
      for (int i = 0; i < 100; ++i) {
        absl::StatusOr<float> v = (base + static_cast<double>(i)).item<float>();
        ASSERT_TRUE(v.ok()) << v.status();
        ASSERT_EQ(*v, static_cast<float>(t + i)) << "thread " << t;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Bigger results still take the staging buffer, their first Get
  // announced too.
  std::vector<float> big((size_t{3} << 20) / 4, 0.5f);
  Tensor b = client->FromVector(big, {static_cast<int64_t>(big.size())});
  absl::StatusOr<std::vector<float>> doubled = (b * 2.0).to_vector<float>();
  ASSERT_TRUE(doubled.ok()) << doubled.status();
  EXPECT_EQ(*doubled, std::vector<float>(big.size(), 1.0f));
}

TEST(ShmTransferTest, FallsBackToTheStreamWithoutARegion) {
  auto daemon = testing::DaemonProcess::Start({"--insecure", "--shm_bytes=0"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Connect((*daemon)->address(), ClientOptions::ShmMode::kOn);
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->shm_active());
  uint32_t seed = 50;
  for (size_t n : Sizes()) RoundTrip(*client, n, seed++);
}

TEST(ShmTransferTest, TurnedOffByTheOption) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto off = Connect((*daemon)->address(), ClientOptions::ShmMode::kOff);
  ASSERT_NE(off, nullptr);
  EXPECT_FALSE(off->shm_active());
  RoundTrip(*off, (size_t{2} << 20) + 3, 77);
  auto on = Connect((*daemon)->address(), ClientOptions::ShmMode::kAuto);
  ASSERT_NE(on, nullptr);
  EXPECT_TRUE(on->shm_active());  // 127.0.0.1: same host
}

TEST(ShmTransferTest, SameHostAddresses) {
  EXPECT_TRUE(IsSameHostAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsSameHostAddress("localhost:1"));
  EXPECT_TRUE(IsSameHostAddress("[::1]:50051"));
  EXPECT_TRUE(IsSameHostAddress("unix:/run/tensord.sock"));
  EXPECT_TRUE(IsSameHostAddress("ipv4:127.0.0.1:5"));
  EXPECT_FALSE(IsSameHostAddress("10.0.0.7:50051"));
  EXPECT_FALSE(IsSameHostAddress("gpu-box:50051"));
}

}  // namespace
}  // namespace tensord
