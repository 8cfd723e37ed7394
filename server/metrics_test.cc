// The metrics: collected from a real session core (server/metrics_collector.h)
// and served over HTTP by the exporter (server/metrics_exporter.h).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "server/metrics_collector.h"
#include "server/metrics_exporter.h"
#include "server/session_test_fixture.h"
#include "tests/socket_io.h"

namespace tensord {
namespace {

using testing_util::SessionTest;

// The value of the sample line that starts with `series` ("name{labels}"),
// or -1 when there is none.
double Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, series + " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(series.size() + 1), &value)) return value;
  }
  return -1;
}

TEST(AtomicHistogramTest, BucketsByUpperBoundWithWeights) {
  AtomicHistogram h({10, 100});
  h.Observe(10);     // le=10
  h.Observe(11, 3);  // le=100, three times
  h.Observe(1000);   // +Inf
  const AtomicHistogram::Snapshot s = h.Read();
  EXPECT_EQ(s.counts, (std::vector<uint64_t>{1, 3, 1}));
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(s.sum, 10u + 33u + 1000u);
}

TEST(MetricsAddressTest, LoopbackUnlessAllowed) {
  EXPECT_TRUE(CheckMetricsAddress("127.0.0.1:0", false).ok());
  EXPECT_TRUE(CheckMetricsAddress("127.8.9.1:9400", false).ok());
  EXPECT_TRUE(CheckMetricsAddress("localhost:9400", false).ok());
  EXPECT_TRUE(CheckMetricsAddress("[::1]:9400", false).ok());
  for (const char* remote : {"0.0.0.0:9400", ":9400", "10.1.2.3:9400",
                             "[::]:9400", "example.com:9400"}) {
    const absl::Status s = CheckMetricsAddress(remote, false);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << remote;
    EXPECT_TRUE(absl::StrContains(s.message(), "--metrics_allow_remote"));
    EXPECT_TRUE(CheckMetricsAddress(remote, true).ok()) << remote;
  }
  EXPECT_FALSE(CheckMetricsAddress("127.0.0.1", true).ok());
  EXPECT_FALSE(CheckMetricsAddress("127.0.0.1:99999", true).ok());
}

// A session whose client chose a hostile name.
class MetricsTest : public SessionTest {
 protected:
  MetricsTest() : SessionTest(HostileHello()) {}
  static v1::Hello HostileHello() {
    v1::Hello hello;
    hello.set_client_name("evil\"} 1\ntensord_forged 1\n{");
    return hello;
  }
  std::string Scrape() {
    MetricsCollector collector(&manager_, nullptr);
    return prometheus::TextSerializer().Serialize(collector.Collect());
  }
  std::string Who() const {
    return absl::StrCat("session=\"", session_->params().id, "\",user=\"",
                        session_->params().user, "\"");
  }
};

TEST_F(MetricsTest, SessionWorkMovesTheMetrics) {
  const std::string before = Scrape();
  EXPECT_EQ(Sample(before, "tensord_ops_total"), 0);
  v1::Batch b;
  Full(&b, 1, {256, 256}, 1.0);  // 256 KiB of float32
  Full(&b, 2, {256, 256}, 2.0);
  Binary(&b, "add", 1, 2, 3);
  Add(&b)->mutable_sync()->set_request_id(++request_);
  session_->Submit(b);
  sink_->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });
  ASSERT_EQ(GetFloats(3).size(), 256u * 256u);  // a download on the stream
  session_->WaitUntilIdle();  // its batch's counts land after its Data frame

  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "tensord_ops_total"), 3);
  EXPECT_EQ(Sample(text, "tensord_commands_total"), 5);  // 3 calls, sync, get
  EXPECT_EQ(
      Sample(text, absl::StrCat("tensord_session_ops_total{", Who(), "}")), 3);
  EXPECT_EQ(Sample(text, absl::StrCat("tensord_session_memory_bytes{", Who(),
                                      ",device=\"cpu\",kind=\"tensors\"}")),
            3 * 256 * 256 * 4);
  EXPECT_EQ(
      Sample(text, absl::StrCat("tensord_user_memory_bytes{user=\"",
                                session_->params().user, "\",device=\"cpu\"}")),
      3 * 256 * 256 * 4);
  EXPECT_EQ(Sample(text, "tensord_sessions{state=\"active\"}"), 1);
  EXPECT_GE(Sample(text,
                   "tensord_device_memory_allocated_bytes{device=\"cpu\","
                   "pool=\"device\"}"),
            3 * 256 * 256 * 4);
  EXPECT_EQ(Sample(text,
                   "tensord_transfer_bytes_total{path=\"stream\","
                   "direction=\"download\"}"),
            256 * 256 * 4);
  EXPECT_EQ(Sample(text, "tensord_command_latency_seconds_count"), 5);
  // Note [Metric labels]: the client's name is in no label, and its
  // newline forged no sample.
  EXPECT_FALSE(absl::StrContains(text, "evil"));
  EXPECT_FALSE(absl::StrContains(text, "tensord_forged"));
}

TEST_F(MetricsTest, ErrorsCountedByCode) {
  v1::Batch b;
  Full(&b, 1, {2, 3}, 1.0);
  Full(&b, 2, {4, 5}, 1.0);
  Binary(&b, "matmul", 1, 2, 3);  // shapes do not match
  Add(&b)->mutable_sync()->set_request_id(++request_);
  session_->Submit(b);
  sink_->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });
  session_->WaitUntilIdle();
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, "tensord_errors_total{code=\"INVALID_ARGUMENT\"}"), 1);
  EXPECT_EQ(Sample(text, "tensord_errors_total{code=\"NOT_FOUND\"}"), 0);
}

TEST_F(MetricsTest, GpuStateFromNvmlWhereItAnswers) {
  std::string why;
  auto nvml = Nvml::Load(&why, "server/libfake_nvml.so");  // two fake GPUs
  ASSERT_NE(nvml, nullptr) << why;
  MetricsCollector collector(&manager_, std::move(nvml));
  const std::string text =
      prometheus::TextSerializer().Serialize(collector.Collect());
  const std::string gpu0 = "{gpu=\"0\",uuid=\"GPU-fake-0\"}";
  EXPECT_EQ(Sample(text, "tensord_gpu_utilization_ratio" + gpu0), 0.75);
  EXPECT_EQ(Sample(text, "tensord_gpu_memory_used_bytes" + gpu0), 3u << 30);
  EXPECT_EQ(Sample(text, "tensord_gpu_temperature_celsius" + gpu0), 61);
  // GPU 1 has no temperature sensor NVML can read: no sample, not a 0.
  EXPECT_EQ(Sample(text,
                   "tensord_gpu_temperature_celsius{gpu=\"1\","
                   "uuid=\"GPU-fake-1\"}"),
            -1);
  // Without NVML (the default here) there are no GPU metrics at all.
  EXPECT_FALSE(absl::StrContains(Scrape(), "tensord_gpu_"));
}

TEST(MetricsAuthTest, UnknownTokensCountedUsersQuotasShown) {
  const std::string path = ::testing::TempDir() + "/metrics_tokens";
  std::ofstream(path) << "alice secret-a quota=1MiB\nbob secret-b admin\n";
  auto devices = DeviceRegistry::Create();
  auto auth = Authenticator::FromFile(path);
  ASSERT_TRUE(auth.ok()) << auth.status();
  testing_util::UseDaemonLogFormat();
  SessionManager manager(devices.get(), auth->get());
  v1::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_token("not-a-token");
  auto sink = std::make_shared<testing_util::RecordingSink>();
  EXPECT_EQ(manager.Open(hello, "", "test", sink).status().code(),
            absl::StatusCode::kUnauthenticated);
  hello.set_token("secret-a");
  auto session = manager.Open(hello, "", "test", sink);
  ASSERT_TRUE(session.ok()) << session.status();
  MetricsCollector collector(&manager, nullptr);
  const std::string text =
      prometheus::TextSerializer().Serialize(collector.Collect());
  EXPECT_EQ(
      Sample(text, "tensord_auth_failures_total{reason=\"unknown_token\"}"), 1);
  EXPECT_EQ(Sample(text, "tensord_user_quota_bytes{user=\"alice\"}"), 1 << 20);
  EXPECT_EQ(Sample(text, "tensord_user_sessions{user=\"alice\"}"), 1);
  EXPECT_EQ(Sample(text, "tensord_user_quota_bytes{user=\"bob\"}"), -1);
  (*session)->Close();
  (*session)->WaitDone();
  manager.Shutdown();
  std::remove(path.c_str());
}

TEST_F(MetricsTest, ExporterServesOnLoopbackOnly) {
  auto collector = std::make_shared<const MetricsCollector>(&manager_, nullptr);
  EXPECT_EQ(
      MetricsExporter::Start("0.0.0.0:0", false, collector).status().code(),
      absl::StatusCode::kInvalidArgument);
  auto exporter = MetricsExporter::Start("127.0.0.1:0", false, collector);
  ASSERT_TRUE(exporter.ok()) << exporter.status();
  ASSERT_GT((*exporter)->port(), 0);
  const int fd = testing::ConnectLoopback((*exporter)->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(
      testing::SendAll(fd, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string reply = testing::RecvUpTo(fd, 1 << 20);
  close(fd);
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 200")) << reply.substr(0, 200);
  EXPECT_TRUE(absl::StrContains(
      reply, absl::StrCat("tensord_session_ops_total{", Who(), "} 0")));
  // Anything but /metrics is not found; a silent client is dropped.
  const int other = testing::ConnectLoopback((*exporter)->port());
  ASSERT_TRUE(testing::SendAll(other, "GET / HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(
      absl::StartsWith(testing::RecvUpTo(other, 1 << 20), "HTTP/1.1 404"));
  close(other);
}

}  // namespace
}  // namespace tensord
