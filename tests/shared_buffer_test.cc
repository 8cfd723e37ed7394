// The C++ client's shared buffers (client/shared_buffer.h; docs/protocol.md
// "Shared buffers") against the real daemon over gRPC loopback with real
// memfds: uploads from and downloads into a buffer round-trip every dtype
// and odd sizes, the buffer may be rewritten once Upload returns, small or
// too-small transfers take the ordinary path or fail cleanly, buffers count
// against the user's quota and die with their session, and without shared
// memory AllocateShared hands out plain memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

using ::tensord::testing::DaemonProcess;

void Fill(char* p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<char>(x >> 24);
  }
}

std::unique_ptr<Client> Connect(const std::string& address,
                                ClientOptions::ShmMode shm,
                                const std::string& token = "") {
  ClientOptions options;
  options.address = address;
  options.shm = shm;
  options.token = token;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

struct Case {
  DType dtype;
  std::vector<int64_t> shape;
};

// Uploads `c` from `src_offset` of `buf`, scribbles over the source (the
// daemon has its copy once Upload returned), downloads it into
// `dst_offset` of `buf` and compares.
void RoundTrip(Client& client, SharedBuffer& buf, const Case& c,
               size_t src_offset, size_t dst_offset, uint32_t seed) {
  size_t n = ItemSize(c.dtype);
  for (int64_t d : c.shape) n *= static_cast<size_t>(d);
  SCOPED_TRACE(::testing::Message() << DTypeName(c.dtype) << " " << n << " B");
  ASSERT_LE(std::max(src_offset, dst_offset) + n, buf.size());
  char* src = static_cast<char*>(buf.data()) + src_offset;
  Fill(src, n, seed);
  if (c.dtype == DType::kBool) {
    for (size_t i = 0; i < n; ++i) src[i] &= 1;  // bool bytes are 0 or 1
  }
  const std::string want(src, n);
  Tensor t = client.Upload(src, c.dtype, c.shape);
  std::memset(src, 0x5A, n);
  char* dst = static_cast<char*>(buf.data()) + dst_offset;
  absl::StatusOr<size_t> got = t.DownloadInto(dst, buf.size() - dst_offset);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, n);
  EXPECT_TRUE(std::string(dst, n) == want);
  // The ordinary path agrees (the tensor, not only the buffer, is right).
  absl::StatusOr<HostTensor> host = t.Download();
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_TRUE(host->bytes == want);
  EXPECT_EQ(host->shape, c.shape);
}

class SharedBufferTest : public testing::DaemonSuite {};

TEST_F(SharedBufferTest, RoundTripsDtypesAndOddSizes) {
  auto client = Connect(address(), ClientOptions::ShmMode::kAuto);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->shm_active());
  absl::StatusOr<SharedBuffer> buf = client->AllocateShared((12 << 20) + 123);
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_TRUE(buf->shared());
  EXPECT_NE(buf->region(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % 4096, 0u);
  EXPECT_TRUE(std::all_of(static_cast<char*>(buf->data()),
                          static_cast<char*>(buf->data()) + buf->size(),
                          [](char b) { return b == 0; }));  // starts zeroed
  const std::vector<Case> cases = {
      {DType::kUInt8, {(256 << 10) + 3}}, {DType::kFloat32, {3, 100003}},
      {DType::kFloat64, {517, 1031}},     {DType::kInt64, {70001}},
      {DType::kBool, {300007}},           {DType::kInt8, {2, 3, 50021}},
      {DType::kFloat16, {1, 150001}},     {DType::kInt32, {(3 << 20) / 4 + 1}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    RoundTrip(*client, *buf, c, 8, (5 << 20) + 24, seed++);
    RoundTrip(*client, *buf, c, (6 << 20) + 4096, 0, seed++);
  }
}

TEST_F(SharedBufferTest, ComputedSmallAndTooLargeDownloads) {
  auto client = Connect(address(), ClientOptions::ShmMode::kAuto);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<SharedBuffer> buf = client->AllocateShared(4 << 20);
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_TRUE(buf->shared());
  float* f = static_cast<float*>(buf->data());
  const int64_t n = (1 << 20) / 4 + 7;
  for (int64_t i = 0; i < n; ++i) f[i] = 0.25f * static_cast<float>(i);
  Tensor x = client->Upload(f, DType::kFloat32, {n});
  // Downloaded before its Ack can have come: the size is waited for.
  Tensor twice = x * 2.0;
  float* out = f + (2 << 20) / 4;
  absl::StatusOr<size_t> got = twice.DownloadInto(out, 2 << 20);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], 0.5f * static_cast<float>(i)) << i;
  }
  // Too small a destination inside the buffer: nothing written.
  std::memset(out, 0x11, n * 4);
  absl::StatusOr<size_t> refused = twice.DownloadInto(out, n * 4 - 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("destination holds"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(std::all_of(reinterpret_cast<char*>(out),
                          reinterpret_cast<char*>(out) + n * 4 - 1,
                          [](char b) { return b == 0x11; }));
  // Small transfers inside the buffer take the ordinary path.
  Tensor small = client->Upload(f, DType::kFloat32, {100});
  absl::StatusOr<size_t> small_got = small.DownloadInto(out, 400);
  ASSERT_TRUE(small_got.ok()) << small_got.status();
  EXPECT_EQ(std::memcmp(out, f, 400), 0);
  // A poisoned tensor's download into the buffer reports its error.
  Tensor bad = x.matmul(x.reshape({1, n}));
  absl::StatusOr<size_t> poisoned = bad.DownloadInto(out, 2 << 20);
  EXPECT_FALSE(poisoned.ok());
  EXPECT_FALSE(client->synchronize().ok());
  EXPECT_TRUE(client->synchronize().ok());  // the session goes on
}

TEST_F(SharedBufferTest, PlainMemoryWithoutSharedMemory) {
  auto client = Connect(address(), ClientOptions::ShmMode::kOff);
  ASSERT_NE(client, nullptr);
  ASSERT_FALSE(client->shm_active());
  absl::StatusOr<SharedBuffer> buf = client->AllocateShared((1 << 20) + 5);
  ASSERT_TRUE(buf.ok()) << buf.status();
  EXPECT_FALSE(buf->shared());
  EXPECT_EQ(buf->region(), 0u);
  ASSERT_NE(buf->data(), nullptr);
  RoundTrip(*client, *buf, {DType::kUInt8, {(256 << 10) + 1}}, 0, 600 << 10, 9);
  SharedBuffer moved = *std::move(buf);
  EXPECT_EQ(moved.size(), size_t{(1 << 20) + 5});
  EXPECT_EQ(client->AllocateShared(0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Quotas and lifetimes need a daemon with a tokens file.
TEST(SharedBufferQuotaTest, ChargedToTheQuotaAndFreedWithTheSession) {
  const std::string tokens = ::testing::TempDir() + "/shared_tokens";
  std::ofstream(tokens) << "alice tok-alice quota=64MiB\n";
  auto daemon = DaemonProcess::Start({"--tokens_file=" + tokens});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  SharedBuffer outliving;
  {
    auto client =
        Connect((*daemon)->address(), ClientOptions::ShmMode::kOn, "tok-alice");
    ASSERT_NE(client, nullptr);
    absl::StatusOr<SharedBuffer> big = client->AllocateShared(48 << 20);
    ASSERT_TRUE(big.ok()) << big.status();
    ASSERT_TRUE(big->shared());
    absl::StatusOr<SharedBuffer> more = client->AllocateShared(32 << 20);
    ASSERT_FALSE(more.ok());
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(more.status().message().find("quota"), std::string::npos)
        << more.status();
    EXPECT_NE(more.status().message().find("shared buffer"), std::string::npos)
        << more.status();
    // Tensors see the buffer's bytes in the quota too.
    absl::StatusOr<std::vector<Tensor>> zeros =
        client->Call("zeros", {}, {{"shape", std::vector<int64_t>{32 << 18}}});
    ASSERT_TRUE(zeros.ok()) << zeros.status();
    absl::Status over = (*zeros)[0].status();
    EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
    // Freed (batched Release, before the next command): room again.
    *big = SharedBuffer();
    absl::StatusOr<SharedBuffer> again = client->AllocateShared(32 << 20);
    ASSERT_TRUE(again.ok()) << again.status();
    // Outlives its Client: the session's end frees the daemon's side (its
    // own destructor then only unmaps).
    outliving = *std::move(again);
  }
  std::memset(outliving.data(), 1, outliving.size());  // still mapped here
  // The ended session's buffers no longer count: alice has her whole quota.
  auto second =
      Connect((*daemon)->address(), ClientOptions::ShmMode::kOn, "tok-alice");
  ASSERT_NE(second, nullptr);
  absl::StatusOr<SharedBuffer> whole = second->AllocateShared(60 << 20);
  EXPECT_TRUE(whole.ok()) << whole.status();
}

TEST(SharedBufferOffTest, TurnedOffByTheDaemon) {
  auto daemon = DaemonProcess::Start({"--insecure", "--shared_buffer_bytes=0"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Connect((*daemon)->address(), ClientOptions::ShmMode::kOn);
  ASSERT_NE(client, nullptr);
  absl::StatusOr<SharedBuffer> buf = client->AllocateShared(1 << 20);
  ASSERT_FALSE(buf.ok());
  EXPECT_EQ(buf.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(buf.status().message().find("--shared_buffer_bytes=0"),
            std::string::npos)
      << buf.status();
  EXPECT_TRUE(client->synchronize().ok());
}

}  // namespace
}  // namespace tensord
