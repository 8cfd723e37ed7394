// Cross-memory attach in raw protocol frames against the real daemon
// (docs/protocol.md "Cross-memory attach"): who the daemon agrees to read
// and write. A client naming the daemon's own pid, or a process that does
// not hold the region's nonce at its probe address, is refused with a clear
// error and its session goes on; this process, once it has mapped the region
// and copied the nonce to its probe, uploads and downloads by it.
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/shm_mapping.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using ::tensord::testing::RawSession;

v1::Hello CmaHello(uint64_t pid, const void* probe) {
  v1::Hello hello;
  hello.set_shm_transfer(true);
  hello.set_cma_pid(pid);
  hello.set_cma_probe_address(reinterpret_cast<uint64_t>(probe));
  return hello;
}

// A Put of `values` read from this process by cross-memory attach.
uint64_t PutByCma(RawSession& raw, const std::vector<float>& values) {
  const uint64_t handle = raw.NewHandle();
  v1::Put* put = raw.Add()->mutable_put();
  put->set_handle(handle);
  put->set_dtype(v1::FLOAT32);
  put->add_shape(static_cast<int64_t>(values.size()));
  put->set_last(true);
  put->set_cma_address(reinterpret_cast<uint64_t>(values.data()));
  put->set_cma_size(values.size() * sizeof(float));
  return handle;
}

// A Get of `handle` written into `into` by cross-memory attach; its request.
uint64_t GetByCma(RawSession& raw, uint64_t handle, std::vector<float>* into) {
  const uint64_t request = raw.NewRequest();
  v1::Get* get = raw.Add()->mutable_get();
  get->set_handle(handle);
  get->set_request_id(request);
  get->set_cma_address(reinterpret_cast<uint64_t>(into->data()));
  get->set_cma_capacity(into->size() * sizeof(float));
  return request;
}

std::string ErrorOf(const RawSession::Reply& reply, uint64_t handle) {
  auto it = reply.created.find(handle);
  return it == reply.created.end() ? "(no Ack)" : it->second.error().message();
}

// The session goes on: a stream Put and Get of the same session work.
void ExpectSessionWorks(RawSession& raw) {
  const uint64_t handle = raw.PutFloats({3});
  const uint64_t request = raw.NewRequest();
  v1::Get* get = raw.Add()->mutable_get();
  get->set_handle(handle);
  get->set_request_id(request);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(reply.data[request], std::string(12, '\0'));
}

class CmaProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto daemon = testing::DaemonProcess::Start({"--insecure"});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
  }
  std::unique_ptr<testing::DaemonProcess> daemon_;
};

TEST_F(CmaProtocolTest, TheDaemonItselfIsRefused) {
  char probe[64] = {};
  RawSession raw(daemon_->address(), "", "raw",
                 CmaHello(static_cast<uint64_t>(daemon_->pid()), probe));
  ASSERT_TRUE(raw.ok());
  EXPECT_TRUE(raw.welcome().cma());  // offered; checked at the first use
  const std::vector<float> values(16, 1.0f);
  const uint64_t handle = PutByCma(raw, values);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(ErrorOf(reply, handle).find("names the daemon itself"),
            std::string::npos)
      << ErrorOf(reply, handle);
  ExpectSessionWorks(raw);
}

TEST_F(CmaProtocolTest, AProbeWithoutTheNonceIsRefused) {
  char probe[64] = {};  // never given the region's nonce
  RawSession raw(daemon_->address(), "", "raw",
                 CmaHello(static_cast<uint64_t>(getpid()), probe));
  ASSERT_TRUE(raw.ok());
  const std::vector<float> values(16, 2.0f);
  const uint64_t handle = PutByCma(raw, values);
  // A Get by it is refused too, as its own error.
  std::vector<float> into(16, 0.0f);
  const uint64_t request = GetByCma(raw, handle, &into);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(ErrorOf(reply, handle)
                .find("probe address does not hold the region's nonce"),
            std::string::npos)
      << ErrorOf(reply, handle);
  ASSERT_FALSE(reply.errors.empty());
  EXPECT_EQ(reply.errors.back().request_id(), request);
  ExpectSessionWorks(raw);
}

TEST_F(CmaProtocolTest, AClientThatMappedTheRegionIsAccepted) {
  char probe[64] = {};
  RawSession raw(daemon_->address(), "", "raw",
                 CmaHello(static_cast<uint64_t>(getpid()), probe));
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.welcome().has_shm());
  std::unique_ptr<RegionMapping> region =
      RegionMapping::Map(raw.welcome().shm(), /*populate=*/false);
  ASSERT_NE(region, nullptr);  // same host, same user
  const std::string& nonce = raw.welcome().shm().nonce();
  ASSERT_LE(nonce.size(), sizeof(probe));
  std::memcpy(probe, nonce.data(), nonce.size());

  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * i - 7.0f;
  const uint64_t handle = PutByCma(raw, values);
  std::vector<float> into(values.size() + 1, -1.0f);
  const uint64_t request = GetByCma(raw, handle, &into);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(ErrorOf(reply, handle), "");
  ASSERT_TRUE(reply.errors.empty()) << reply.errors[0].DebugString();
  EXPECT_EQ(std::vector<float>(into.begin(), into.end() - 1), values);
  EXPECT_EQ(into.back(), -1.0f);  // only the tensor's bytes were written
  // A Put claiming more bytes than its tensor holds is refused unread.
  v1::Put* liar = raw.Add()->mutable_put();
  const uint64_t lying = raw.NewHandle();
  liar->set_handle(lying);
  liar->set_dtype(v1::FLOAT32);
  liar->add_shape(4);
  liar->set_last(true);
  liar->set_cma_address(reinterpret_cast<uint64_t>(values.data()));
  liar->set_cma_size(uint64_t{1} << 40);
  reply = raw.Flush();
  EXPECT_NE(ErrorOf(reply, lying).find("carries 1099511627776 bytes"),
            std::string::npos)
      << ErrorOf(reply, lying);
  ExpectSessionWorks(raw);
}

TEST(CmaProtocolOffTest, DaemonRunWithoutItSaysSo) {
  auto daemon = testing::DaemonProcess::Start({"--insecure", "--cma=false"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  char probe[64] = {};
  RawSession raw((*daemon)->address(), "", "raw",
                 CmaHello(static_cast<uint64_t>(getpid()), probe));
  ASSERT_TRUE(raw.ok());
  EXPECT_FALSE(raw.welcome().cma());
  const std::vector<float> values(4, 1.0f);
  const uint64_t handle = PutByCma(raw, values);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(
      ErrorOf(reply, handle).find("cma_address without cross-memory attach"),
      std::string::npos)
      << ErrorOf(reply, handle);
  ExpectSessionWorks(raw);
}

}  // namespace
}  // namespace tensord
