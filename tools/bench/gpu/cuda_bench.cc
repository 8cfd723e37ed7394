// GPU benchmarks through the runtime's op table on cuda:0 (what a session
// runs, minus the wire): tiny-op launch throughput, matmul 8192^2 in
// float32 (TF32 off) and bfloat16, a reduction and softmax. Prints one line
// per case, then every figure as one JSON object on the last line (read by
// tools/bench/run_gpu.py); without a GPU it prints "SKIP ..." and exits 0.
//
//   bazel run -c opt //tools/bench/gpu:cuda_bench [-- --quick]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda_discovery.h"
#include "runtime/device.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

struct Bench {
  Device* cuda;
  OpContext ctx;

  Tensor Call(const std::string& name, std::vector<Tensor> in,
              std::map<std::string, AttrValue> attrs = {}) {
    const OpDef* op = FindOp(name);
    auto built = Attrs::Build(name, op->attrs, std::move(attrs));
    auto out = RunOp(*op, in, *built, ctx);
    if (!out.ok()) {
      std::fprintf(stderr, "%s failed: %s\n", name.c_str(),
                   std::string(out.status().message()).c_str());
      std::exit(1);
    }
    return (*out)[0];
  }
  Tensor Randn(std::vector<int64_t> shape, DType dtype) {
    return Call("randn", {},
                {{"shape", shape}, {"dtype", dtype}, {"device", "cuda:0"}});
  }
  // Seconds per call of `body`, timed over `iters` after a warm-up, with
  // the device synchronised at both ends.
  double Time(int iters, const std::function<void()>& body) {
    body();
    cuda->Synchronize(nullptr).IgnoreError();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) body();
    cuda->Synchronize(nullptr).IgnoreError();
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / iters;
  }
};

int Main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  auto devices = DeviceRegistry::Create();
  Device* cuda = devices->Find("cuda:0");
  if (cuda == nullptr) {
    std::string why;
    DiscoverCudaDevices(&why);
    std::printf("SKIP cuda_bench: no CUDA device (%s)\n", why.c_str());
    return 0;
  }
  Generator generator;
  Bench b{cuda, {}};
  b.ctx.device = cuda;
  b.ctx.devices = devices.get();
  b.ctx.generator = &generator;
  b.ctx.alloc.session = 1;
  std::printf("device: %s (%s, cc %s)\n", cuda->name().c_str(),
              cuda->description().description.c_str(),
              cuda->description().compute_capability.c_str());
  std::vector<std::pair<std::string, double>> json;  // the last line

  Tensor x = b.Randn({256}, DType::kFloat32);
  const int tiny = quick ? 1000 : 20000;
  const double t_add = b.Time(tiny, [&] { b.Call("add", {x, x}); });
  std::printf("tiny add [256] f32:      %8.2f us/op  (%.0f ops/s)\n",
              t_add * 1e6, 1 / t_add);
  json.emplace_back("tiny_ops_per_s", 1 / t_add);

  const int64_t n = quick ? 2048 : 8192;
  for (DType d : {DType::kFloat32, DType::kBFloat16}) {
    Tensor a = b.Randn({n, n}, d), c = b.Randn({n, n}, d);
    const double t = b.Time(quick ? 2 : 10, [&] { b.Call("mm", {a, c}); });
    std::printf("matmul %lldx%lld %-9s %8.2f ms     (%.1f TFLOP/s)\n",
                static_cast<long long>(n), static_cast<long long>(n),
                std::string(DTypeName(d)).c_str(), t * 1e3,
                2.0 * n * n * n / t / 1e12);
    json.emplace_back("matmul_" + std::string(DTypeName(d)) + "_tflops",
                      2.0 * n * n * n / t / 1e12);
  }
  json.emplace_back("matmul_n", static_cast<double>(n));
  Tensor big = b.Randn({4096, 4096}, DType::kFloat32);
  const double t_sum = b.Time(20, [&] {
    b.Call("sum", {big}, {{"dim", std::vector<int64_t>{1}}});
  });
  std::printf("sum rows [4096,4096]:    %8.2f ms     (%.0f GB/s)\n",
              t_sum * 1e3, 4096.0 * 4096 * 4 / t_sum / 1e9);
  json.emplace_back("sum_rows_ms", t_sum * 1e3);
  const double t_sm = b.Time(20, [&] {
    b.Call("softmax", {big}, {{"dim", int64_t{1}}});
  });
  std::printf("softmax [4096,4096]:     %8.2f ms     (%.0f GB/s)\n", t_sm * 1e3,
              2 * 4096.0 * 4096 * 4 / t_sm / 1e9);
  json.emplace_back("softmax_ms", t_sm * 1e3);
  std::string gpu = cuda->description().description;
  for (char& c : gpu) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  std::printf("{\"gpu\": \"%s\"", gpu.c_str());
  for (const auto& [key, value] : json) {
    std::printf(", \"%s\": %.6g", key.c_str(), value);
  }
  std::printf("}\n");
  return 0;
}

}  // namespace
}  // namespace tensord

int main(int argc, char** argv) { return tensord::Main(argc, argv); }
