// Tokens, quotas and Admin access against the real daemon started with a
// tokens file.
#include <signal.h>

#include <fstream>

#include "client/tensord_client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/admin.grpc.pb.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

class TenancyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = ::testing::TempDir() + "/tokens";
    tokens_path_ = new std::string(path);
    std::ofstream(path) << "alice tok-alice quota=4MiB\n"
                        << "bob tok-bob\n"
                        << "carol tok-carol\n"
                        << "ops tok-ops admin\n";
    auto d = testing::DaemonProcess::Start(
        {"--tokens_file=" + path, "--max_sessions_per_user=3"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    delete tokens_path_;
  }

  absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& token) {
    ClientOptions options;
    options.address = daemon_->address();
    options.token = token;
    return Client::Connect(options);
  }
  grpc::Status Admin(const std::string& token, v1::MemoryStatsResponse* out) {
    auto stub = v1::Admin::NewStub(grpc::CreateChannel(
        daemon_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    return stub->MemoryStats(&ctx, {}, out);
  }
  static testing::DaemonProcess* daemon_;
  static std::string* tokens_path_;
};
testing::DaemonProcess* TenancyTest::daemon_ = nullptr;
std::string* TenancyTest::tokens_path_ = nullptr;

TEST_F(TenancyTest, TokensAreRequiredAndChecked) {
  EXPECT_EQ(Connect("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Connect("tok-mallory").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(Connect("tok-bob").ok());
}

TEST_F(TenancyTest, AdminNeedsAnAdminToken) {
  v1::MemoryStatsResponse out;
  EXPECT_EQ(Admin("", &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Admin("tok-bob", &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(Admin("tok-ops", &out).ok());
  ASSERT_GE(out.devices_size(), 1);
  EXPECT_EQ(out.devices(0).device(), "cpu");
  EXPECT_TRUE(out.devices(0).stats().contains("allocated_bytes.all.current"));
  EXPECT_TRUE(out.devices(0).stats().contains("reserved_bytes.all.peak"));
}

TEST_F(TenancyTest, OverQuotaIsAClearErrorAndTheSessionGoesOn) {
  auto alice = Connect("tok-alice");
  ASSERT_TRUE(alice.ok()) << alice.status();
  auto& c = **alice;
  // 3 MiB fits in the 4 MiB quota; a second 3 MiB does not.
  auto a = c.Call("zeros", {}, {{"shape", std::vector<int64_t>{768, 1024}}});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)[0].status().ok());
  auto b = c.Call("ones", {}, {{"shape", std::vector<int64_t>{768, 1024}}});
  ASSERT_TRUE(b.ok());
  absl::Status over = (*b)[0].status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_NE(over.message().find("quota"), std::string::npos) << over;
  // Freeing the first tensor makes room again.
  a->clear();
  auto again = c.Call("ones", {}, {{"shape", std::vector<int64_t>{768, 1024}}});
  ASSERT_TRUE(again.ok());
  auto sum = (*again)[0].sum().item<float>();
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(*sum, 768.0f * 1024.0f);
  // Bob has no quota: the same allocation succeeds for him meanwhile.
  auto bob = Connect("tok-bob");
  ASSERT_TRUE(bob.ok());
  auto big =
      (*bob)->Call("ones", {}, {{"shape", std::vector<int64_t>{2048, 1024}}});
  ASSERT_TRUE(big.ok());
  EXPECT_TRUE((*big)[0].status().ok());
}

TEST_F(TenancyTest, TheQuotaIsPerUserAcrossSessions) {
  auto first = Connect("tok-alice");
  auto second = Connect("tok-alice");
  ASSERT_TRUE(first.ok() && second.ok());
  auto a =
      (*first)->Call("zeros", {}, {{"shape", std::vector<int64_t>{768, 1024}}});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)[0].status().ok());  // 3 MiB of alice's 4 MiB
  auto b = (*second)->Call("zeros", {},
                           {{"shape", std::vector<int64_t>{768, 1024}}});
  ASSERT_TRUE(b.ok());
  absl::Status over = (*b)[0].status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted) << over;
  EXPECT_NE(over.message().find("user 'alice'"), std::string::npos) << over;
}

TEST_F(TenancyTest, SessionsPerUserAreCapped) {
  std::vector<std::unique_ptr<Client>> open;
  for (int i = 0; i < 3; ++i) {
    auto c = Connect("tok-carol");
    ASSERT_TRUE(c.ok()) << c.status();
    open.push_back(*std::move(c));
  }
  auto fourth = Connect("tok-carol");
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.status().message().find("carol"), std::string::npos);
  EXPECT_TRUE(Connect("tok-bob").ok());  // other users are not affected
}

TEST_F(TenancyTest, SighupReloadsTokensAndRevokesRemovedOnes) {
  ASSERT_TRUE(Connect("tok-bob").ok());
  {
    std::ofstream out(*tokens_path_);
    out << "alice tok-alice quota=4MiB\ncarol tok-carol\nops tok-ops admin\n"
        << "dave tok-dave\n";
  }
  kill(daemon_->pid(), SIGHUP);
  // The reload is asynchronous to this process: wait (bounded) for it.
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Connect("tok-dave").status().code() ==
             absl::StatusCode::kUnauthenticated &&
         absl::Now() < deadline) {
  }
  EXPECT_TRUE(Connect("tok-dave").ok());
  EXPECT_EQ(Connect("tok-bob").status().code(),
            absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace tensord
