// RemoteTransport (client/remote_transport.h) against a fake session
// (client/fake_transport_host.h): stream chunks both ways, the fallback to
// them when the bulk socket cannot connect, and what it leaves to the local
// transport. The bulk socket against the real daemon: tests/bulk_*_test.cc.
#include "client/remote_transport.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "client/fake_transport_host.h"
#include "gtest/gtest.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// Answers Gets on the stream, from what was uploaded, in one Data frame.
void AnswerFromPuts(FakeTransportHost& host) {
  host.answer = [&host](uint64_t id, const v1::Command& command,
                        DownloadTarget target) {
    std::string bytes;
    for (const v1::Put& put : host.puts) {
      if (put.handle() == command.get().handle()) {
        bytes += put.payload().data();
      }
    }
    PendingDownload got;
    EXPECT_FALSE(command.get().has_into()) << "a stream Get names no payload";
    if (target.data != nullptr) {
      got.assembler.SetDestination(target.data, target.capacity);
    }
    v1::Data data = FakeTransportHost::DataFor(id, bytes.size(), 0, true);
    data.mutable_payload()->set_data(bytes);
    got.status = got.assembler.Add(data);
    got.done = true;
    return got;
  };
}

RemoteTransport Make(FakeTransportHost* host, uint32_t bulk_port = 0) {
  ClientOptions options;
  options.address = "127.0.0.1:1";
  options.connect_timeout = absl::Seconds(2);
  v1::Welcome welcome;
  welcome.set_bulk_port(bulk_port);
  return RemoteTransport(options, welcome, host);
}

TEST(RemoteTransportTest, UploadsInStreamChunksAndDownloadsThem) {
  FakeTransportHost host;
  RemoteTransport transport = Make(&host);
  const uint64_t n = (5u << 20) / 2;  // 2.5 chunks of 1 MiB
  const std::string bytes = Pattern(n);
  absl::StatusOr<uint64_t> handle =
      transport.Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(host.uploads, 1);
  ASSERT_EQ(host.puts.size(), 3u);
  std::string sent;
  for (size_t i = 0; i < host.puts.size(); ++i) {
    const v1::Put& put = host.puts[i];
    EXPECT_EQ(put.handle(), *handle);
    EXPECT_EQ(put.offset(), sent.size());
    EXPECT_EQ(put.last(), i + 1 == host.puts.size());
    EXPECT_EQ(put.shape_size(), i == 0 ? 1 : 0);  // meta on the first only
    ASSERT_TRUE(put.payload().has_data());
    sent += put.payload().data();
  }
  EXPECT_EQ(sent, bytes);

  AnswerFromPuts(host);
  absl::StatusOr<HostTensor> back = transport.Download(*handle, "site", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bytes, bytes);
  ASSERT_EQ(host.requests.size(), 1u);
  EXPECT_EQ(host.requests[0].get().site(), "site");
  // Into the caller's memory.
  std::string into(n, '\0');
  back = transport.Download(*handle, "", {into.data(), into.size()});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->bytes.empty());
  EXPECT_EQ(into, bytes);
}

TEST(RemoteTransportTest, SmallTensorsAreOnePut) {
  FakeTransportHost host;
  RemoteTransport transport = Make(&host);
  const std::string bytes = Pattern(10);
  ASSERT_TRUE(transport.Upload(bytes.data(), 10, FirstOf(10), MetaOf(10)).ok());
  ASSERT_EQ(host.puts.size(), 1u);
  EXPECT_TRUE(host.puts[0].last());
  EXPECT_EQ(host.puts[0].payload().data(), bytes);
  // An empty tensor is one empty Put too.
  ASSERT_TRUE(transport.Upload(nullptr, 0, FirstOf(0), MetaOf(0)).ok());
  ASSERT_EQ(host.puts.size(), 2u);
  EXPECT_TRUE(host.puts[1].last());
}

// A port that refuses connections: nothing listens there.
uint32_t ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(RemoteTransportTest, LanesThatCannotConnectFallBackToTheStream) {
  FakeTransportHost host;
  RemoteTransport transport = Make(&host, ClosedPort());
  const uint64_t n = 2u << 20;
  const std::string bytes = Pattern(n);
  absl::StatusOr<uint64_t> handle =
      transport.Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_FALSE(transport.bulk_active());
  EXPECT_EQ(transport.bulk_lanes(), 0u);
  ASSERT_EQ(host.puts.size(), 2u);
  for (const v1::Put& put : host.puts) EXPECT_TRUE(put.payload().has_data());
  AnswerFromPuts(host);
  absl::StatusOr<HostTensor> back = transport.Download(*handle, "", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bytes, bytes);
}

TEST(RemoteTransportTest, HasNothingLocal) {
  FakeTransportHost host;
  RemoteTransport transport = Make(&host);
  EXPECT_FALSE(transport.local());
  EXPECT_FALSE(transport.cma_active());
  EXPECT_FALSE(transport.bulk_active());  // none offered
  v1::Hello hello;
  transport.FillResumeHello(&hello);
  EXPECT_FALSE(hello.shm_transfer());
  absl::StatusOr<SharedAllocation> shared = transport.AllocateShared(1 << 20);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->mapping, nullptr);  // the caller uses plain memory
  EXPECT_TRUE(host.requests.empty());
}

TEST(RemoteTransportTest, ABrokenSessionFailsTheDownload) {
  FakeTransportHost host;  // answers nothing: the session's error
  RemoteTransport transport = Make(&host);
  const std::string bytes = Pattern(16);
  absl::StatusOr<uint64_t> handle =
      transport.Upload(bytes.data(), 16, FirstOf(16), MetaOf(16));
  ASSERT_TRUE(handle.ok());
  EXPECT_EQ(transport.Download(*handle, "", {}).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord
