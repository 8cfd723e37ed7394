// kernels/cuda/sort.h against kernels/cpu/sort.h on random inputs (apart
// from cuda_kernels_test.cc to keep both files short). Sort: several
// shapes and dims, ties, NaN, -0.0 and infinities, both orders, integer
// and bool dtypes, empty and 0-d, a row long enough for the device-wide
// sort. Scans: int64 sums that overflow, bool, floats. Multinomial: the
// same draws as the CPU from the same uniforms, distinct draws without
// replacement, and the CPU's errors for invalid weights. Skips without a
// GPU.
#include "gtest/gtest.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "kernels/cpu/sort.h"
#include "kernels/cuda/cuda_kernels_test_fixture.h"
#include "kernels/cuda/sort.h"

namespace tensord {
namespace {

class CudaSortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      GTEST_SKIP() << "no CUDA device";
    }
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : buffers_) cudaFree(p);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  static StridedView View(void* data, const Shape& shape, DType dtype) {
    return cuda_testing::ContiguousView(data, shape, dtype);
  }
  void* Malloc(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes + 16), cudaSuccess);
    buffers_.push_back(p);
    return p;
  }
  // A device copy of `host` (`dtype` stored as S).
  template <typename S>
  StridedView Upload(const std::vector<S>& host, const Shape& shape,
                     DType dtype) {
    void* p = Malloc(host.size() * sizeof(S));
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(S),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    return View(p, shape, dtype);
  }
  template <typename S>
  std::vector<S> Download(const StridedView& v) {
    std::vector<S> out(v.numel());
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), v.data, out.size() * sizeof(S),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }
  cuda::WorkspaceFn Workspace() {
    return
        [this](size_t bytes) -> absl::StatusOr<void*> { return Malloc(bytes); };
  }

  // Sorts random values of type S (dtype d; ties, and NaN, -0.0 and
  // infinities for floats) on both devices and compares bit for bit.
  template <typename S>
  void CheckSort(DType d, const Shape& shape, std::mt19937* rng) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<S> x(n);
    for (S& v : x) {
      const int r = static_cast<int>((*rng)() % 16);
      if (d == DType::kBool) {  // S = uint8_t holding 0 or 1
        v = static_cast<S>(r & 1);
      } else if constexpr (std::is_floating_point_v<S>) {
        v = r == 0   ? std::numeric_limits<S>::quiet_NaN()
            : r == 1 ? -std::numeric_limits<S>::quiet_NaN()
            : r == 2 ? S(-0.0)
            : r == 3 ? std::numeric_limits<S>::infinity()
            : r == 4 ? -std::numeric_limits<S>::infinity()
                     : S(r - 9) / 4;
      } else if constexpr (std::is_signed_v<S>) {
        v = static_cast<S>((r - 8) * (std::numeric_limits<S>::max() / 8));
      } else {
        v = static_cast<S>(r * 16);
      }
    }
    for (int dim = 0; dim < std::max<int>(shape.size(), 1); ++dim) {
      for (bool descending : {false, true}) {
        std::vector<S> want_v(n), got_v;
        std::vector<int64_t> want_i(n), got_i;
        ASSERT_TRUE(cpu::Sort(View(x.data(), shape, d), dim, descending,
                              View(want_v.data(), shape, d),
                              View(want_i.data(), shape, DType::kInt64))
                        .ok());
        StridedView values = View(Malloc(n * sizeof(S)), shape, d);
        StridedView indices =
            View(Malloc(n * sizeof(int64_t)), shape, DType::kInt64);
        ASSERT_TRUE(cuda::Sort(Upload(x, shape, d), dim, descending, values,
                               indices, Workspace(), stream_)
                        .ok());
        got_v = Download<S>(values);
        got_i = Download<int64_t>(indices);
        const std::string what =
            std::string(DTypeName(d)) + " dim " + std::to_string(dim) +
            (descending ? " descending" : "") + " numel " + std::to_string(n);
        EXPECT_EQ(want_i, got_i) << what;
        EXPECT_EQ(std::memcmp(want_v.data(), got_v.data(), n * sizeof(S)), 0)
            << what;
      }
    }
  }

  cudaStream_t stream_ = nullptr;
  std::vector<void*> buffers_;
};

TEST_F(CudaSortTest, SortMatchesCpu) {
  std::mt19937 rng(1);
  const std::vector<Shape> shapes = {{},        {0},       {7},       {5, 300},
                                     {3, 4, 5}, {2, 0, 3}, {2, 70000}};
  for (const Shape& shape : shapes) {
    CheckSort<float>(DType::kFloat32, shape, &rng);
    CheckSort<double>(DType::kFloat64, shape, &rng);
    CheckSort<int64_t>(DType::kInt64, shape, &rng);
    CheckSort<int32_t>(DType::kInt32, shape, &rng);
    CheckSort<int8_t>(DType::kInt8, shape, &rng);
    CheckSort<uint8_t>(DType::kUInt8, shape, &rng);
    CheckSort<uint8_t>(DType::kBool, shape, &rng);
  }
}

TEST_F(CudaSortTest, ScansMatchCpu) {
  std::mt19937 rng(2);
  for (const Shape& shape :
       std::vector<Shape>{{}, {0, 3}, {5, 1000}, {3, 4, 5}, {2, 3000}}) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<int64_t> big(n);  // sums past 2^63 wrap around
    for (int64_t& v : big) v = static_cast<int64_t>(rng()) << 31;
    std::vector<uint8_t> flags(n);  // bool: or / and
    for (uint8_t& v : flags) v = rng() % 8 == 0;
    std::vector<double> real(n);
    for (double& v : real) v = 0.5 + (rng() % 1000) / 1000.0;
    for (int dim = 0; dim < std::max<int>(shape.size(), 1); ++dim) {
      for (bool product : {false, true}) {
        const std::string what =
            "dim " + std::to_string(dim) + (product ? " cumprod" : " cumsum");
        std::vector<int64_t> want_i(n);
        ASSERT_TRUE(cpu::CumScan(View(big.data(), shape, DType::kInt64), dim,
                                 product,
                                 View(want_i.data(), shape, DType::kInt64))
                        .ok());
        StridedView out_i = View(Malloc(n * 8), shape, DType::kInt64);
        ASSERT_TRUE(cuda::CumScan(Upload(big, shape, DType::kInt64), dim,
                                  product, out_i, stream_)
                        .ok());
        EXPECT_EQ(want_i, Download<int64_t>(out_i)) << what << " int64";
        std::vector<uint8_t> want_b(n);
        ASSERT_TRUE(cpu::CumScan(View(flags.data(), shape, DType::kBool), dim,
                                 product,
                                 View(want_b.data(), shape, DType::kBool))
                        .ok());
        StridedView out_b = View(Malloc(n), shape, DType::kBool);
        ASSERT_TRUE(cuda::CumScan(Upload(flags, shape, DType::kBool), dim,
                                  product, out_b, stream_)
                        .ok());
        EXPECT_EQ(want_b, Download<uint8_t>(out_b)) << what << " bool";
        std::vector<double> want_f(n);
        ASSERT_TRUE(cpu::CumScan(View(real.data(), shape, DType::kFloat64), dim,
                                 product,
                                 View(want_f.data(), shape, DType::kFloat64))
                        .ok());
        StridedView out_f = View(Malloc(n * 8), shape, DType::kFloat64);
        ASSERT_TRUE(cuda::CumScan(Upload(real, shape, DType::kFloat64), dim,
                                  product, out_f, stream_)
                        .ok());
        const std::vector<double> got_f = Download<double>(out_f);
        for (int64_t i = 0; i < n; ++i) {
          EXPECT_NEAR(got_f[i], want_f[i], 1e-9 * (1 + std::fabs(want_f[i])))
              << what << " float64 [" << i << "]";
        }
      }
    }
  }
}

TEST_F(CudaSortTest, MultinomialDrawsAsCpu) {
  std::mt19937 rng(3);
  const int64_t rows = 6, n = 300, k = 40;
  std::vector<float> p(rows * n);
  for (float& w : p) w = rng() % 4 == 0 ? 0.0f : (rng() % 1000) / 999.0f;
  std::vector<double> u(rows * k);
  for (double& v : u) v = (rng() % 1000000) / 1e6;
  for (bool replacement : {true, false}) {
    std::vector<int64_t> want(rows * k);
    ASSERT_TRUE(cpu::Multinomial(View(p.data(), {rows, n}, DType::kFloat32),
                                 View(u.data(), {rows, k}, DType::kFloat64),
                                 replacement,
                                 View(want.data(), {rows, k}, DType::kInt64))
                    .ok());
    StridedView out = View(Malloc(rows * k * 8), {rows, k}, DType::kInt64);
    auto* words = static_cast<int64_t*>(Malloc(2 * 8));
    ASSERT_TRUE(cuda::Multinomial(Upload(p, {rows, n}, DType::kFloat32),
                                  Upload(u, {rows, k}, DType::kFloat64),
                                  replacement, out, words, Workspace(), stream_)
                    .ok());
    const std::vector<int64_t> got = Download<int64_t>(out);
    int64_t host[cuda::kMultinomialWords];
    ASSERT_EQ(cudaMemcpy(host, words, sizeof(host), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_TRUE(cuda::MultinomialStatus(host, k).ok());
    EXPECT_EQ(want, got) << (replacement ? "with" : "without");
    for (int64_t r = 0; r < rows && !replacement; ++r) {
      std::set<int64_t> seen(got.begin() + r * k, got.begin() + (r + 1) * k);
      EXPECT_EQ(seen.size(), static_cast<size_t>(k)) << "row " << r;
      for (int64_t c : seen) EXPECT_GT(p[r * n + c], 0) << "row " << r;
    }
  }
}

TEST_F(CudaSortTest, MultinomialRefusesCpuRefusals) {
  const int64_t n = 4, k = 3;
  const double nan = std::nan("");
  const std::vector<std::vector<double>> bad_rows = {
      {0.1, -0.5, 1, 1}, {0.1, nan, 1, 1}, {0.1, INFINITY, 1, 1},
      {0, 0, 0, 0},      {0, 1, 0, 1},  // 2 positive < k without
  };
  for (const auto& bad : bad_rows) {
    // A valid first row, then the bad one: the CPU names the first problem.
    std::vector<double> p = {1, 2, 3, 4};
    p.insert(p.end(), bad.begin(), bad.end());
    const std::vector<double> u(2 * k, 0.5);
    std::vector<int64_t> want(2 * k, -7);
    const absl::Status cpu_status = cpu::Multinomial(
        View(p.data(), {2, n}, DType::kFloat64),
        View(const_cast<double*>(u.data()), {2, k}, DType::kFloat64),
        /*replacement=*/false, View(want.data(), {2, k}, DType::kInt64));
    ASSERT_EQ(cpu_status.code(), absl::StatusCode::kInvalidArgument);
    const std::vector<int64_t> sentinel(2 * k, -7);
    StridedView out = Upload(sentinel, {2, k}, DType::kInt64);
    auto* words = static_cast<int64_t*>(Malloc(2 * 8));
    ASSERT_TRUE(cuda::Multinomial(Upload(p, {2, n}, DType::kFloat64),
                                  Upload(u, {2, k}, DType::kFloat64),
                                  /*replacement=*/false, out, words,
                                  Workspace(), stream_)
                    .ok());
    EXPECT_EQ(Download<int64_t>(out), sentinel) << "nothing is written";
    int64_t host[cuda::kMultinomialWords];
    ASSERT_EQ(cudaMemcpy(host, words, sizeof(host), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(cuda::MultinomialStatus(host, k), cpu_status);
  }
}

}  // namespace
}  // namespace tensord

#else  // !TENSORD_WITH_CUDA

TEST(CudaSort, Skipped) { GTEST_SKIP() << "built without the CUDA toolkit"; }

#endif  // TENSORD_WITH_CUDA
