// kernels/cuda/sort.h against kernels/cpu/sort.h on random inputs (apart
// from cuda_kernels_test.cc to keep both files short). Sort: several
// shapes and dims, ties, NaN, -0.0 and infinities, both orders, integer
// and bool dtypes, empty and 0-d, a row long enough for the device-wide
// sort. Scans: int64 sums that overflow, bool, floats. Multinomial: the
// same draws as the CPU from the same uniforms, distinct draws without
// replacement, and the CPU's errors for invalid weights. cummax/cummin,
// logcumsumexp, mode and searchsorted (scan.cu). Skips without a GPU.
#include "gtest/gtest.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
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

// cummax/cummin (values bit for bit, indices), logcumsumexp, mode (rows of
// at most 16 elements without NaN, where the CPU's std::sort is stable:
// Note [Mode ties] in kernels/cpu/sort.cc) and searchsorted (per-row and
// 1-d boundaries, both sides, int32 output) against the CPU kernels, on
// values with ties, NaN and infinities.
TEST_F(CudaSortTest, ScanRowsMatchCpu) {
  std::mt19937 rng(4);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const Shape& shape :
       std::vector<Shape>{{}, {0, 3}, {7}, {5, 12}, {3, 4, 5}, {2, 300}}) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<double> x(n), plain(n);
    for (int64_t i = 0; i < n; ++i) {
      const int r = static_cast<int>(rng() % 12);
      x[i] = r == 0 ? nan : r == 1 ? inf : r == 2 ? -inf : (r - 6) / 2.0;
      plain[i] = static_cast<double>(rng() % 4);
    }
    const Shape& s = shape;
    const DType f64 = DType::kFloat64, i64 = DType::kInt64;
    for (int dim = 0; dim < std::max<int>(shape.size(), 1); ++dim) {
      const std::string what =
          "numel " + std::to_string(n) + " dim " + std::to_string(dim);
      for (bool max : {true, false}) {
        std::vector<double> want_v(n);
        std::vector<int64_t> want_i(n);
        ASSERT_TRUE(cpu::CumExtreme(View(x.data(), s, f64), dim, max,
                                    View(want_v.data(), s, f64),
                                    View(want_i.data(), s, i64))
                        .ok());
        StridedView v = View(Malloc(n * 8), s, f64);
        StridedView i = View(Malloc(n * 8), s, i64);
        ASSERT_TRUE(
            cuda::CumExtreme(Upload(x, s, f64), dim, max, v, i, stream_).ok());
        const std::vector<double> got_v = Download<double>(v);
        EXPECT_EQ(std::memcmp(want_v.data(), got_v.data(), n * 8), 0) << what;
        EXPECT_EQ(want_i, Download<int64_t>(i)) << what;
      }
      std::vector<double> want_l(n);
      ASSERT_TRUE(cpu::LogCumSumExp(View(x.data(), s, f64), dim,
                                    View(want_l.data(), s, f64))
                      .ok());
      StridedView l = View(Malloc(n * 8), s, f64);
      ASSERT_TRUE(cuda::LogCumSumExp(Upload(x, s, f64), dim, l, stream_).ok());
      const std::vector<double> got_l = Download<double>(l);
      for (int64_t k = 0; k < n; ++k) {
        if (std::isnan(want_l[k]) || std::isinf(want_l[k])) {
          EXPECT_EQ(std::isnan(got_l[k]), std::isnan(want_l[k])) << what;
          if (!std::isnan(want_l[k])) EXPECT_EQ(got_l[k], want_l[k]) << what;
        } else {
          EXPECT_NEAR(got_l[k], want_l[k], 1e-12 * (1 + std::fabs(want_l[k])))
              << what;
        }
      }
      const int64_t size = shape.empty() ? 1 : shape[dim];
      if (size == 0 || size > 16) continue;
      Shape kept = shape;
      if (!kept.empty()) kept[dim] = 1;
      const int64_t m = n / size;
      std::vector<double> want_mv(m);
      std::vector<int64_t> want_mi(m);
      ASSERT_TRUE(cpu::Mode(View(plain.data(), s, f64), dim,
                            View(want_mv.data(), kept, f64),
                            View(want_mi.data(), kept, i64))
                      .ok());
      StridedView sorted = View(Malloc(n * 8), s, f64);
      StridedView pos = View(Malloc(n * 8), s, i64);
      ASSERT_TRUE(cuda::Sort(Upload(plain, s, f64), dim, false, sorted, pos,
                             Workspace(), stream_)
                      .ok());
      StridedView mv = View(Malloc(m * 8), kept, f64);
      StridedView mi = View(Malloc(m * 8), kept, i64);
      ASSERT_TRUE(cuda::ModeOfSorted(sorted, pos, dim, mv, mi, stream_).ok());
      EXPECT_EQ(want_mv, Download<double>(mv)) << what << " mode";
      EXPECT_EQ(want_mi, Download<int64_t>(mi)) << what << " mode";
    }
  }
  // searchsorted: 3 rows of 9 sorted boundaries (ties, inf, NaN last) and
  // 3 x 50 values; then the first row for all 150 values.
  std::vector<double> bd(27), vals(150);
  for (double& b : bd) b = static_cast<double>(rng() % 6) - 2;
  for (int r = 0; r < 3; ++r) {
    std::sort(bd.begin() + r * 9, bd.begin() + r * 9 + 8);
    bd[r * 9 + 8] = nan;
  }
  bd[7] = inf;  // row 0's largest number
  for (double& v : vals) {
    const int r = static_cast<int>(rng() % 14);
    v = r == 0 ? nan : r == 1 ? -inf : (r - 7) / 2.0;
  }
  for (const Shape& bshape : std::vector<Shape>{{3, 9}, {9}}) {
    const Shape vshape = bshape.size() == 2 ? Shape{3, 50} : Shape{150};
    for (bool right : {false, true}) {
      for (DType out : {DType::kInt64, DType::kInt32}) {
        std::vector<int64_t> want(150);  // int32 results use half of it
        const StridedView bview = View(bd.data(), bshape, DType::kFloat64);
        ASSERT_TRUE(
            cpu::SearchSorted(bview, View(vals.data(), vshape, DType::kFloat64),
                              right, View(want.data(), vshape, out))
                .ok());
        StridedView got = View(Malloc(150 * 8), vshape, out);
        ASSERT_TRUE(cuda::SearchSorted(Upload(bd, bshape, DType::kFloat64),
                                       Upload(vals, vshape, DType::kFloat64),
                                       right, got, stream_)
                        .ok());
        const std::vector<int64_t> got_i = Download<int64_t>(got);
        const size_t bytes = 150 * (out == DType::kInt64 ? 8 : 4);
        EXPECT_EQ(std::memcmp(want.data(), got_i.data(), bytes), 0)
            << "searchsorted rank " << bshape.size() << (right ? " right" : "");
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
