// Load: 16 concurrent clients x 50k ops each over loopback. No errors,
// bounded daemon memory (peak RSS from /proc), the allocator back to its
// baseline once they leave; p50/p99 synchronize() latency printed (the
// figures in docs/reliability.md come from this output).
//
//   TENSORD_LOAD_CLIENTS=16 TENSORD_LOAD_OPS=50000 (the defaults)
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  int out = fallback;
  return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
}

int64_t RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      int64_t kb = 0;
      in >> kb;
      return kb << 10;
    }
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

TEST(LoadTest, ManyClientsManyOpsNoErrorsBoundedMemory) {
  const int clients = EnvInt("TENSORD_LOAD_CLIENTS", 16);
  const int ops = EnvInt("TENSORD_LOAD_OPS", 50000);
  constexpr int kOpsPerSync = 100;
  auto daemon = testing::DaemonProcess::Start(
      {"--insecure", "--max_sessions_per_user=64"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  const int64_t baseline = testing::ReadCpuMemory(address).allocated;
  const int64_t rss_before = RssBytes((*daemon)->pid());

  std::atomic<int> running{clients}, errors{0};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      ClientOptions options;
      options.address = address;
      options.client_name = "load";
      auto c = Client::Connect(options);
      if (!c.ok()) {
        ++errors;
        --running;
        return;
      }
      Tensor one = ones(**c, {16});
      Tensor x = zeros(**c, {16});
      for (int done = 0; done < ops; done += kOpsPerSync) {
        for (int k = 0; k < kOpsPerSync; ++k) x = add(x, one);
        const absl::Time t0 = absl::Now();
        if (!(*c)->synchronize().ok()) ++errors;
        latencies[i].push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
      }
      auto v = x.to_vector<float>();
      if (!v.ok() || (*v)[0] != static_cast<float>(ops)) ++errors;
      --running;
    });
  }
  // Sample the daemon's RSS while the clients run (measurement only).
  int64_t peak_rss = rss_before;
  while (running.load() > 0) {
    peak_rss = std::max(peak_rss, RssBytes((*daemon)->pid()));
    absl::SleepFor(absl::Milliseconds(50));
  }
  for (auto& t : threads) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  EXPECT_EQ(errors.load(), 0);
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  const int64_t allocated_after = [&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (testing::CountSessions(address) != 0 && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    return testing::ReadCpuMemory(address).allocated;
  }();
  EXPECT_EQ(allocated_after, baseline);
  EXPECT_LT(peak_rss, int64_t{1} << 30) << "daemon RSS grew past 1 GiB";
  std::printf(
      "load: %d clients x %d ops in %.1f s (%.0f ops/s); sync latency "
      "p50 %.0f us, p99 %.0f us over %zu syncs; daemon RSS %.0f MiB before, "
      "%.0f MiB peak; allocator %lld bytes after (baseline %lld)\n",
      clients, ops, seconds, clients * ops / seconds, Percentile(all, 0.5),
      Percentile(all, 0.99), all.size(), rss_before / 1048576.0,
      peak_rss / 1048576.0, static_cast<long long>(allocated_after),
      static_cast<long long>(baseline));
  EXPECT_EQ((*daemon)->Terminate(), 0);
}

}  // namespace
}  // namespace tensord
