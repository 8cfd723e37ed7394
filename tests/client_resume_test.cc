// Automatic resume in the C++ client against the real daemon: a TCP proxy in
// the test process (cutting_proxy.h) carries the client's stream and cuts it at
// moments the test chooses (between ops, mid-upload, mid-download). Results
// must equal a run without cuts and nothing may run twice; a session the daemon
// did not keep (--resume_grace=0) fails every read with a clear status.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "client/session.h"
#include "client/tensord_client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/admin.grpc.pb.h"
#include "tests/cutting_proxy.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

using testing::CuttingProxy;

// The stream carries every byte unless `shm` (then a small staging buffer,
// so that uploads and downloads span several commands to cut).
// Without `bulk`, big transfers without a region take the stream (the bulk
// socket goes to the daemon directly, past the proxy).
ClientOptions Through(const CuttingProxy& proxy, bool shm = false,
                      bool cma = false, bool bulk = false) {
  ClientOptions options;
  options.address = proxy.address();
  options.shm =
      shm ? ClientOptions::ShmMode::kOn : ClientOptions::ShmMode::kOff;
  options.cma = cma;
  options.bulk = bulk;
  options.staging_bytes = 256 << 10;
  options.connect_timeout = absl::Seconds(10);
  return options;
}

// A workload whose every read is recorded; with `proxy`, the stream is cut
// at several points. Checks its own values against the host as it goes.
// `cut_bytes`: how far into the big upload and download the cuts come.
std::vector<float> Workload(Client& client, CuttingProxy* proxy,
                            size_t cut_bytes = size_t{3} << 19) {
  std::vector<float> seen;
  auto record = [&seen](const Tensor& t) {
    absl::StatusOr<std::vector<float>> v = t.to_vector<float>();
    EXPECT_TRUE(v.ok()) << v.status();
    if (v.ok()) seen.insert(seen.end(), v->begin(), v->end());
    return v.ok() ? *v : std::vector<float>();
  };
  const int kSteps = 30;
  Tensor one = client.FromVector<float>({1.0f}, {1});
  Tensor counter = client.FromVector<float>({0.0f}, {1});
  Tensor acc = client.FromVector<float>({0, 0, 0, 0}, {4});
  std::vector<float> expected_acc(4, 0.0f);
  for (int i = 0; i < kSteps; ++i) {
    const float f = static_cast<float>(i);
    Tensor x = client.FromVector<float>({f, f + 1, f + 2, f + 3}, {4});
    acc = acc + (x * 2.0 + 1.0);
    for (int k = 0; k < 4; ++k) expected_acc[k] += 2 * (f + k) + 1;
    // In place: applied twice would show in the count.
    EXPECT_TRUE(client.Call("add_", {counter, one}).ok());
    if (proxy != nullptr && i == 3) proxy->CutAll();  // ops queued, unsent
    if (proxy != nullptr && i == 8) {
      EXPECT_TRUE(client.Flush().ok());
      proxy->CutAll();  // sent, Ack maybe not yet received
    }
    if (i % 5 == 4) {
      EXPECT_EQ(record(acc), expected_acc) << "step " << i;
      EXPECT_EQ(record(counter), std::vector<float>{f + 1}) << "step " << i;
    }
  }
  // Cut mid-upload (the Put batches are resent) and mid-download (Data
  // chunks already assembled are not fed twice).
  const size_t n = (size_t{3} << 20) / sizeof(float);  // 3 MiB: 3+ chunks
  std::vector<float> big(n);
  for (size_t i = 0; i < n; ++i) big[i] = static_cast<float>(i % 1001);
  if (proxy != nullptr) proxy->CutAfter(CuttingProxy::kUp, cut_bytes);
  Tensor b = client.FromVector(big, {static_cast<int64_t>(n)});
  Tensor b2 = b + 1.0;
  EXPECT_TRUE(client.synchronize().ok());
  if (proxy != nullptr) proxy->CutAfter(CuttingProxy::kDown, cut_bytes);
  absl::StatusOr<std::vector<float>> back = b2.to_vector<float>();
  EXPECT_TRUE(back.ok()) << back.status();
  if (back.ok()) {
    for (size_t i = 0; i < n; ++i) {
      if ((*back)[i] != big[i] + 1) {
        ADD_FAILURE() << "element " << i << ": " << (*back)[i];
        break;
      }
    }
    seen.push_back(static_cast<float>(back->size()));
  }
  EXPECT_EQ(record(counter), std::vector<float>{kSteps});
  EXPECT_TRUE(client.synchronize().ok());
  return seen;
}

TEST(ClientResumeTest, CutStreamsResumeTransparently) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  CuttingProxy proxy((*daemon)->address());

  auto plain = Client::Connect(Through(proxy));
  ASSERT_TRUE(plain.ok()) << plain.status();
  const std::vector<float> reference = Workload(**plain, nullptr);
  EXPECT_EQ((*plain)->internal_session()->resumes(), 0);
  plain->reset();
  ASSERT_EQ(proxy.cuts(), 0);

  auto client = Client::Connect(Through(proxy));
  ASSERT_TRUE(client.ok()) << client.status();
  const std::vector<float> cut = Workload(**client, &proxy);
  EXPECT_EQ(cut, reference);
  EXPECT_EQ(proxy.cuts(), 4);
  EXPECT_GE((*client)->internal_session()->resumes(), 4);
  EXPECT_TRUE((*daemon)->alive());
}

// The workload through `proxy` plainly (the reference), then on a session
// with `options` whose big transfers have the stream cut `cut_bytes` in;
// the values must match. Returns the client's resumes (-1: no session).
int ResumedWorkload(const testing::DaemonProcess& daemon, CuttingProxy& proxy,
                    const ClientOptions& options, size_t cut_bytes) {
  auto plain = Client::Connect(Through(proxy));
  EXPECT_TRUE(plain.ok()) << plain.status();
  if (!plain.ok()) return -1;
  const std::vector<float> reference = Workload(**plain, nullptr);
  plain->reset();
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return -1;
  EXPECT_EQ((*client)->shm_active(),
            options.shm == ClientOptions::ShmMode::kOn);
  EXPECT_EQ((*client)->cma_active(), options.cma);
  EXPECT_EQ((*client)->bulk_active(), options.bulk);
  const std::vector<float> cut = Workload(**client, &proxy, cut_bytes);
  EXPECT_EQ(cut, reference);
  EXPECT_TRUE(daemon.alive());
  return static_cast<int>((*client)->internal_session()->resumes());
}

// Through the shared-memory region: a Put resent after a resume still finds
// its bytes in the slot (slots are reused only once acked), and ranged Gets
// answered twice are not copied twice.
TEST(ClientResumeTest, ShmTransfersResumeTransparently) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  CuttingProxy proxy((*daemon)->address());
  // Shm Put/Data frames carry no payload: a few hundred bytes in, the big
  // upload (12 slots' worth) and download are under way.
  const int resumes =
      ResumedWorkload(**daemon, proxy, Through(proxy, /*shm=*/true), 400);
  EXPECT_EQ(proxy.cuts(), 4);
  EXPECT_GE(resumes, 4);
}

// By cross-memory attach the big upload is one Put that waits for its Ack
// and the download one Get: a resume resends the Put (the daemon reads the
// unchanged bytes again) and the Get, and the values are the same.
TEST(ClientResumeTest, CmaTransfersResumeTransparently) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  CuttingProxy proxy((*daemon)->address());
  const int resumes = ResumedWorkload(
      **daemon, proxy, Through(proxy, /*shm=*/true, /*cma=*/true), 64);
  EXPECT_GE(proxy.cuts(), 3);
  EXPECT_GE(resumes, 3);
}

// On the bulk socket (which does not go through the proxy) a cut stream
// loses a bulk Put's command or a Get's Data frame, never their bytes: the
// resent Put reads the bytes still waiting on the socket, the replayed Data
// tells the client to read the ones the daemon wrote once.
TEST(ClientResumeTest, BulkTransfersResumeTransparently) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  // The proxy forwards the gRPC port only: the bulk socket's port is the
  // daemon's, on the same host.
  CuttingProxy proxy((*daemon)->address());
  const int resumes = ResumedWorkload(
      **daemon, proxy, Through(proxy, false, false, /*bulk=*/true), 64);
  EXPECT_GE(proxy.cuts(), 3);
  EXPECT_GE(resumes, 3);
}

bool SessionListed(const std::string& address, const std::string& id) {
  auto admin = v1::Admin::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::ListSessionsResponse response;
  EXPECT_TRUE(admin->ListSessions(&context, {}, &response).ok());
  for (const v1::SessionInfo& s : response.sessions()) {
    if (s.session_id() == id) return true;
  }
  return false;
}

TEST(ClientResumeTest, ExpiredSessionFailsEveryReadClearly) {
  auto daemon =
      testing::DaemonProcess::Start({"--insecure", "--resume_grace=0s"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  CuttingProxy proxy((*daemon)->address());
  ClientOptions options = Through(proxy);
  options.batch_delay = absl::Hours(1);  // only sync points send
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  Tensor x = (*client)->FromVector<float>({1, 2, 3}, {3});
  EXPECT_EQ(*(x * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  Tensor y = x + 1.0;  // queued, not sent

  // The resume must reach the daemon only after it dropped the session.
  proxy.Hold(true);
  proxy.CutAll();
  const std::string id = (*client)->session_id();
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (SessionListed((*daemon)->address(), id) && absl::Now() < give_up) {
  }
  ASSERT_FALSE(SessionListed((*daemon)->address(), id));
  proxy.Hold(false);

  absl::StatusOr<std::vector<float>> pending = y.to_vector<float>();
  ASSERT_FALSE(pending.ok());
  EXPECT_EQ(pending.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(pending.status().message().find(
                "the tensord session could not be resumed"),
            std::string::npos)
      << pending.status();
  // Later reads and sync points fail the same way, at once.
  absl::Status later = (*client)->synchronize();
  EXPECT_EQ(later.code(), absl::StatusCode::kNotFound) << later;
  EXPECT_FALSE(
      ((*client)->FromVector<float>({1}, {1})).to_vector<float>().ok());
}

TEST(ClientResumeTest, ResumeCanBeTurnedOff) {
  auto daemon = testing::DaemonProcess::Start({"--insecure"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  CuttingProxy proxy((*daemon)->address());
  ClientOptions options = Through(proxy);
  options.resume = false;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE((*client)->synchronize().ok());
  proxy.CutAll();
  absl::Status status = (*client)->synchronize();
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message().find("could not be resumed"), std::string::npos)
      << status;
  EXPECT_EQ((*client)->internal_session()->resumes(), 0);
}

}  // namespace
}  // namespace tensord
