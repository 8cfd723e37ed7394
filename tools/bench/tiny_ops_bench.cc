// tiny_ops_bench: the C++ client's side of tools/bench/run_all.sh.
//
//   tiny_ops_bench --address=127.0.0.1:PORT [--ops=100000] [--reps=5]
//                  [--sync_iters=2000] [--transfer_mib=256]
//                  [--transfer=stream|shm|shared|all] [--staging_mib=0]
//                  [--host_memory=thp|plain]
//
// Prints one JSON object on stdout with, each as the median over `reps`
// repetitions after one warm-up:
//   tiny_ops_per_s: `ops` dependent adds on a 1-element tensor, then one
//                   synchronize (the tiny-op throughput);
//   sync_p50_us / sync_p99_us: item() of a freshly created scalar;
//   upload_gbps / download_gbps: a `transfer_mib` MiB float32 tensor (in
//                   host memory allocated as NumPy allocates the memcpy
//                   reference's arrays, or --host_memory=plain) over
//                   TCP without a region (ClientOptions::shm = kOff, as
//                   from another host: on the bulk socket when the daemon
//                   offers one, bulk: 1),
//                   downloaded with Tensor::DownloadInto into a buffer the
//                   runs reuse (as the memcpy reference's destination is);
//   grpc_upload_gbps / grpc_download_gbps: the same on the gRPC stream alone
//                   (ClientOptions::bulk = false);
//   shm_upload_gbps / shm_download_gbps: the same on a same-host session:
//                   by cross-memory attach when it works (cma: 1), else
//                   through the staging shared buffer (0 when the region
//                   could not be mapped);
//   region_upload_gbps / region_download_gbps: through the staging buffer
//                   even so (ClientOptions::cma = false: two copies per
//                   byte; the name is the old one of the path);
//   shared_upload_gbps / shared_download_gbps: the same from and into
//                   shared buffers (Client::AllocateShared, one copy; 0
//                   without shared memory).
// The numbers are compared against local PyTorch by run_all.sh, not here.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "client/tensord_client.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "tiny_ops_bench: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  std::exit(1);
}

// One timed run of `ops` dependent adds, closed by a synchronize.
double TinyOpsRun(tensord::Client& client, int ops) {
  tensord::Tensor one = client.FromVector<float>({1.0f}, {1});
  tensord::Tensor x = client.FromVector<float>({0.0f}, {1});
  absl::Status s = client.synchronize();
  if (!s.ok()) Die("synchronize", s);
  const auto start = Clock::now();
  for (int i = 0; i < ops; ++i) x = x + one;
  s = client.synchronize();
  const auto end = Clock::now();
  if (!s.ok()) Die("tiny ops", s);
  auto v = x.item<float>();
  if (!v.ok()) Die("item", v.status());
  if (*v != static_cast<float>(ops)) {
    std::fprintf(stderr, "tiny_ops_bench: wrong sum %g, want %d\n", *v, ops);
    std::exit(1);
  }
  return ops / Seconds(start, end);
}

// Latencies in microseconds of item() on a fresh scalar.
std::vector<double> SyncRun(tensord::Client& client, int iters) {
  std::vector<double> us;
  us.reserve(iters);
  tensord::Tensor base = client.FromVector<float>({1.0f}, {1});
  for (int i = 0; i < iters; ++i) {
    const auto start = Clock::now();
    tensord::Tensor fresh = base + 1.0;
    auto v = fresh.item<float>();
    const auto end = Clock::now();
    if (!v.ok()) Die("item", v.status());
    us.push_back(Seconds(start, end) * 1e6);
  }
  return us;
}

struct Transfer {
  double upload_gbps;
  double download_gbps;
};

// Uploads `n` floats from `src`, then downloads them into `into`.
Transfer TransferRun(tensord::Client& client, const float* src, size_t n,
                     char* into) {
  const double bytes = n * sizeof(float);
  auto start = Clock::now();
  tensord::Tensor t =
      client.Upload(src, tensord::DType::kFloat32, {static_cast<int64_t>(n)});
  absl::Status s = client.synchronize();
  auto mid = Clock::now();
  if (!s.ok()) Die("upload", s);
  absl::StatusOr<size_t> back = t.DownloadInto(into, n * sizeof(float));
  auto end = Clock::now();
  if (!back.ok()) Die("download", back.status());
  if (*back != bytes || std::memcmp(into, src, bytes) != 0) {
    std::fprintf(stderr, "tiny_ops_bench: download mismatch\n");
    std::exit(1);
  }
  return {bytes / Seconds(start, mid) / 1e9, bytes / Seconds(mid, end) / 1e9};
}

// kStream: no region (as from another host): the bulk socket carries the
// bytes when the daemon offers one; kGrpc: the gRPC stream alone.
enum class Path { kStream, kGrpc, kShm, kRegion, kShared };

// Host memory of the transfer rows, allocated as NumPy allocates a big array
// (the memcpy reference's): mmap'ed, transparent huge pages asked for
// (MADV_HUGEPAGE) before the first touch. `huge` false (--host_memory=plain):
// as a std::vector's, 4 KiB pages where THP is "madvise" (Debian's default).
class HostBuffer {
 public:
  HostBuffer(size_t bytes, bool huge) : bytes_(bytes), huge_(huge) {
    if (!huge_ || bytes == 0) {
      plain_.resize(bytes);
      data_ = plain_.data();
      return;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("tiny_ops_bench: mmap");
      std::exit(1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);  // advice: may be ignored
    data_ = static_cast<char*>(p);
    std::memset(data_, 0, bytes);  // faulted in, as a vector's
  }
  ~HostBuffer() {
    if (huge_ && bytes_ != 0) munmap(data_, bytes_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  char* data() const { return data_; }

 private:
  const size_t bytes_;
  const bool huge_;
  std::vector<char> plain_;
  char* data_ = nullptr;
};

// Medians of `reps` transfers (after a warm-up) on a session of its own:
// without a region (the bulk socket or the stream), through the local
// transport, or from and into shared buffers (false when the path is not
// available). `direct`: whether the path's own mechanism carried them (the
// bulk socket without a region, cross-memory attach with one); `lanes`: how
// many lanes the bulk socket had.
bool TransferMedians(tensord::ClientOptions options,
                     const std::vector<float>& host, bool huge, int reps,
                     Path path, double* up_gbps, double* down_gbps,
                     bool* direct = nullptr, uint32_t* lanes = nullptr) {
  const bool want_shm = path != Path::kStream && path != Path::kGrpc;
  options.cma = path != Path::kRegion;
  options.bulk = path != Path::kGrpc;
  options.shm = want_shm ? tensord::ClientOptions::ShmMode::kOn
                         : tensord::ClientOptions::ShmMode::kOff;
  auto connected = tensord::Client::Connect(options);
  if (!connected.ok()) Die("connect", connected.status());
  tensord::Client& client = **connected;
  if (client.shm_active() != want_shm) return false;
  if (direct != nullptr) {
    *direct =
        path == Path::kStream ? client.bulk_active() : client.cma_active();
  }
  if (lanes != nullptr) *lanes = client.bulk_lanes();
  const size_t bytes = host.size() * sizeof(float);
  HostBuffer plain_src(path == Path::kShared ? 0 : bytes, huge);
  HostBuffer plain_into(path == Path::kShared ? 0 : bytes, huge);
  tensord::SharedBuffer shared_src, shared_into;
  const float* src = reinterpret_cast<const float*>(plain_src.data());
  char* into = plain_into.data();
  if (path == Path::kShared) {
    absl::StatusOr<tensord::SharedBuffer> a = client.AllocateShared(bytes);
    absl::StatusOr<tensord::SharedBuffer> b = client.AllocateShared(bytes);
    if (!a.ok()) Die("AllocateShared", a.status());
    if (!b.ok()) Die("AllocateShared", b.status());
    if (!a->shared() || !b->shared()) return false;
    shared_src = *std::move(a);
    shared_into = *std::move(b);
    std::memcpy(shared_src.data(), host.data(), bytes);
    src = static_cast<const float*>(shared_src.data());
    into = static_cast<char*>(shared_into.data());
  } else {
    std::memcpy(plain_src.data(), host.data(), bytes);
  }
  // Warm-up: the daemon's cache holds the block, `into` is faulted in.
  TransferRun(client, src, host.size(), into);
  std::vector<double> up, down;
  for (int r = 0; r < reps; ++r) {
    Transfer t = TransferRun(client, src, host.size(), into);
    up.push_back(t.upload_gbps);
    down.push_back(t.download_gbps);
  }
  *up_gbps = Median(up);
  *down_gbps = Median(down);
  return true;
}

bool Flag(const char* arg, const char* name, std::string* value) {
  std::string prefix = std::string("--") + name + "=";
  if (!absl::StartsWith(arg, prefix)) return false;
  *value = arg + prefix.size();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // As a release build of Abseil would: Debian's is built without NDEBUG,
  // which leaves Mutex deadlock detection on (a graph update per lock; the
  // daemon turns it off the same way, server/main.cc). README.md tells C++
  // client users to do this in their own main.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::string address, value;
  int ops = 100000, reps = 5, sync_iters = 2000, transfer_mib = 256;
  int staging_mib = 0;
  std::string transfer = "all", host_memory = "thp";
  for (int i = 1; i < argc; ++i) {
    if (Flag(argv[i], "address", &value)) {
      address = value;
    } else if (Flag(argv[i], "ops", &value)) {
      (void)absl::SimpleAtoi(value, &ops);
    } else if (Flag(argv[i], "reps", &value)) {
      (void)absl::SimpleAtoi(value, &reps);
    } else if (Flag(argv[i], "sync_iters", &value)) {
      (void)absl::SimpleAtoi(value, &sync_iters);
    } else if (Flag(argv[i], "transfer_mib", &value)) {
      (void)absl::SimpleAtoi(value, &transfer_mib);
    } else if (Flag(argv[i], "transfer", &value)) {
      transfer = value;
    } else if (Flag(argv[i], "host_memory", &value)) {
      host_memory = value;
    } else if (Flag(argv[i], "staging_mib", &value)) {
      (void)absl::SimpleAtoi(value, &staging_mib);
    } else {
      std::fprintf(stderr, "tiny_ops_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  tensord::ClientOptions options;
  options.address = address;
  options.client_name = "tiny_ops_bench";
  auto connected = tensord::Client::Connect(options);
  if (!connected.ok()) Die("connect", connected.status());
  tensord::Client& client = **connected;

  TinyOpsRun(client, ops / 10);  // warm-up
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) rates.push_back(TinyOpsRun(client, ops));

  SyncRun(client, sync_iters / 10);  // warm-up
  std::vector<double> lat = SyncRun(client, sync_iters);

  double up = 0, down = 0, grpc_up = 0, grpc_down = 0, shm_up = 0, shm_down = 0;
  double shared_up = 0, shared_down = 0, region_up = 0, region_down = 0;
  double lane_up = 0, lane_down = 0;  // the bulk socket with one lane
  bool cma = false, bulk = false;
  uint32_t lanes = 0;
  if (transfer_mib > 0 && transfer != "none") {
    std::vector<float> host(static_cast<size_t>(transfer_mib) << 18);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
    const int transfer_reps = std::max(3, reps / 2);
    const bool huge = host_memory != "plain";
    options.staging_bytes = static_cast<size_t>(staging_mib) << 20;
    auto wanted = [&transfer](const char* name) {
      return transfer == "all" || transfer == name;
    };
    if (wanted("stream")) {
      TransferMedians(options, host, huge, transfer_reps, Path::kStream, &up,
                      &down, &bulk, &lanes);
      tensord::ClientOptions one_lane = options;
      one_lane.bulk_lanes = 1;
      TransferMedians(one_lane, host, huge, transfer_reps, Path::kStream,
                      &lane_up, &lane_down);
      TransferMedians(options, host, huge, transfer_reps, Path::kGrpc, &grpc_up,
                      &grpc_down);
    }
    if (wanted("shm") &&
        (!TransferMedians(options, host, huge, transfer_reps, Path::kShm,
                          &shm_up, &shm_down, &cma) ||
         !TransferMedians(options, host, huge, transfer_reps, Path::kRegion,
                          &region_up, &region_down))) {
      std::fprintf(stderr, "tiny_ops_bench: no shared-memory region\n");
    }
    if (wanted("shared") &&
        !TransferMedians(options, host, huge, transfer_reps, Path::kShared,
                         &shared_up, &shared_down)) {
      std::fprintf(stderr, "tiny_ops_bench: no shared buffers\n");
    }
  }
  std::printf(
      "{\"tiny_ops_per_s\": %.1f, \"sync_p50_us\": %.2f, \"sync_p99_us\": "
      "%.2f, \"upload_gbps\": %.4f, \"download_gbps\": %.4f, "
      "\"shm_upload_gbps\": %.4f, \"shm_download_gbps\": %.4f, "
      "\"shared_upload_gbps\": %.4f, \"shared_download_gbps\": %.4f, "
      "\"region_upload_gbps\": %.4f, \"region_download_gbps\": %.4f, "
      "\"grpc_upload_gbps\": %.4f, \"grpc_download_gbps\": %.4f, "
      "\"one_lane_upload_gbps\": %.4f, \"one_lane_download_gbps\": %.4f, "
      "\"cma\": %d, \"bulk\": %d, \"bulk_lanes\": %u}\n",
      Median(rates), Percentile(lat, 0.5), Percentile(lat, 0.99), up, down,
      shm_up, shm_down, shared_up, shared_down, region_up, region_down, grpc_up,
      grpc_down, lane_up, lane_down, cma ? 1 : 0, bulk ? 1 : 0, lanes);
  return 0;
}
