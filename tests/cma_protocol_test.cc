// Cross-memory attach in raw protocol frames against the real daemon
// (docs/protocol.md "Cross-memory attach"): the Welcome's ticket and
// binding socket, transfers refused with one fixed text until this process
// binds the session, both ways once it has, a resume that must bind again,
// and a daemon run without it. Attacks on it are tests/security/
// cma_attack_test.cc.
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/cma_bind.h"
#include "tests/cma_frames.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using ::tensord::testing::ErrorOf;
using ::tensord::testing::ExpectSessionWorks;
using ::tensord::testing::GetByCma;
using ::tensord::testing::PutByCma;
using ::tensord::testing::RawSession;
using ::tensord::testing::RequestErrorOf;
using ::tensord::testing::ShmHello;

constexpr char kNotBound[] =
    "cross-memory attach is not bound for this session";

bool Bind(const RawSession& raw) {
  return CmaBindThisProcess(raw.welcome().cma_socket(),
                            raw.welcome().cma_ticket(), 5000);
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

TEST_F(CmaProtocolTest, TheWelcomeOffersATicketAndASocket) {
  RawSession a(daemon_->address(), "", "a", ShmHello());
  RawSession b(daemon_->address(), "", "b", ShmHello());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a.welcome().cma());
  EXPECT_EQ(a.welcome().cma_socket().substr(0, 13), "@tensord-cma-");
  EXPECT_EQ(a.welcome().cma_socket(), b.welcome().cma_socket());
  EXPECT_EQ(a.welcome().cma_ticket().size(), kCmaTicketBytes);
  EXPECT_NE(a.welcome().cma_ticket(), b.welcome().cma_ticket());
  // Without a region there is nothing to offer.
  RawSession plain(daemon_->address(), "", "plain");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain.welcome().cma());
  EXPECT_TRUE(plain.welcome().cma_ticket().empty());
}

TEST_F(CmaProtocolTest, UnboundTransfersFailUntilThisProcessBinds) {
  RawSession raw(daemon_->address(), "", "raw", ShmHello());
  ASSERT_TRUE(raw.ok());
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * i - 7.0f;
  uint64_t handle = PutByCma(raw, values);
  std::vector<float> into(values.size() + 1, -1.0f);
  uint64_t request = GetByCma(raw, handle, &into);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(ErrorOf(reply, handle).find(kNotBound), std::string::npos)
      << ErrorOf(reply, handle);
  EXPECT_NE(RequestErrorOf(reply, request).find(kNotBound), std::string::npos)
      << RequestErrorOf(reply, request);
  ExpectSessionWorks(raw);

  ASSERT_TRUE(Bind(raw));
  EXPECT_FALSE(Bind(raw));  // a ticket binds once
  handle = PutByCma(raw, values);
  request = GetByCma(raw, handle, &into);
  reply = raw.Flush();
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
  v1::CmaSpan* lie = liar->mutable_payload()->mutable_cma();
  lie->set_address(reinterpret_cast<uint64_t>(values.data()));
  lie->set_size(uint64_t{1} << 40);
  reply = raw.Flush();
  EXPECT_NE(ErrorOf(reply, lying).find("carries 1099511627776 bytes"),
            std::string::npos)
      << ErrorOf(reply, lying);
  ExpectSessionWorks(raw);
}

TEST_F(CmaProtocolTest, AResumeMustBindAgain) {
  RawSession first(daemon_->address(), "", "raw", ShmHello());
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(Bind(first));
  first.Cancel();  // the link drops; another stream resumes the session
  v1::Hello hello = ShmHello();
  hello.set_resume_session_id(first.welcome().session_id());
  hello.set_resume_secret(first.welcome().resume_secret());
  RawSession resumed(daemon_->address(), "", "raw", hello);
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE(resumed.welcome().resumed());
  ASSERT_TRUE(resumed.welcome().cma());
  EXPECT_NE(resumed.welcome().cma_ticket(), first.welcome().cma_ticket());
  const std::vector<float> values(64, 3.0f);
  uint64_t handle = PutByCma(resumed, values);
  RawSession::Reply reply = resumed.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(ErrorOf(reply, handle).find(kNotBound), std::string::npos)
      << ErrorOf(reply, handle);
  EXPECT_FALSE(Bind(first));  // the old ticket is gone
  ASSERT_TRUE(Bind(resumed));
  handle = PutByCma(resumed, values);
  reply = resumed.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(ErrorOf(reply, handle), "");
}

TEST(CmaProtocolOffTest, DaemonRunWithoutItSaysSo) {
  auto daemon = testing::DaemonProcess::Start({"--insecure", "--cma=false"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  RawSession raw((*daemon)->address(), "", "raw", ShmHello());
  ASSERT_TRUE(raw.ok());
  EXPECT_FALSE(raw.welcome().cma());
  EXPECT_TRUE(raw.welcome().cma_socket().empty());
  EXPECT_TRUE(raw.welcome().cma_ticket().empty());
  const std::vector<float> values(4, 1.0f);
  const uint64_t handle = PutByCma(raw, values);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(
      ErrorOf(reply, handle).find("payload.cma without cross-memory attach"),
      std::string::npos)
      << ErrorOf(reply, handle);
  ExpectSessionWorks(raw);
}

}  // namespace
}  // namespace tensord
