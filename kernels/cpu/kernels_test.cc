// Hand-computed cases for the CPU kernels on strided (non-contiguous and
// broadcast) views. Values across the op set are checked against PyTorch in
// tests/python; these pin the loop machinery itself.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/reduce.h"

namespace tensord {
namespace cpu {
namespace {

template <typename T>
StridedView View(std::vector<T>& data, DType dtype, std::vector<int64_t> sizes,
                 std::vector<int64_t> strides) {
  StridedView v;
  v.data = data.data();
  v.dtype = dtype;
  v.ndim = static_cast<int>(sizes.size());
  for (int i = 0; i < v.ndim; ++i) {
    v.sizes[i] = sizes[i];
    v.strides[i] = strides[i];
  }
  return v;
}

TEST(ElementwiseTest, BroadcastAddWithAlpha) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};  // [2, 3]
  std::vector<float> b = {10, 20};            // [2, 1] broadcast over cols
  std::vector<float> out(6);
  ASSERT_TRUE(Binary(BinaryOp::kAdd, View(a, DType::kFloat32, {2, 3}, {3, 1}),
                     View(b, DType::kFloat32, {2, 3}, {1, 0}), 0.5,
                     View(out, DType::kFloat32, {2, 3}, {3, 1}))
                  .ok());
  EXPECT_EQ(out, (std::vector<float>{6, 7, 8, 14, 15, 16}));
}

TEST(ElementwiseTest, TransposedInputs) {
  std::vector<double> a = {1, 2, 3, 4, 5, 6};  // [2,3], read as its transpose
  std::vector<double> out(6);
  ASSERT_TRUE(Binary(BinaryOp::kMul, View(a, DType::kFloat64, {3, 2}, {1, 3}),
                     View(a, DType::kFloat64, {3, 2}, {1, 3}), 1,
                     View(out, DType::kFloat64, {3, 2}, {2, 1}))
                  .ok());
  EXPECT_EQ(out, (std::vector<double>{1, 16, 4, 25, 9, 36}));
}

TEST(ElementwiseTest, CopyConvertsDTypes) {
  std::vector<float> in = {-1.5f, 0.0f, 2.7f};
  std::vector<int64_t> out(3);
  std::vector<bool> unused;
  ASSERT_TRUE(Copy(View(in, DType::kFloat32, {3}, {1}),
                   View(out, DType::kInt64, {3}, {1}))
                  .ok());
  EXPECT_EQ(out, (std::vector<int64_t>{-1, 0, 2}));
}

TEST(ElementwiseTest, LargeParallelFillAndRelu) {
  std::vector<float> x(1 << 20);
  ASSERT_TRUE(Arange(View(x, DType::kFloat32, {1 << 20}, {1}), -1000, 1).ok());
  std::vector<float> y(x.size());
  ASSERT_TRUE(Unary(UnaryOp::kRelu, View(x, DType::kFloat32, {1 << 20}, {1}),
                    View(y, DType::kFloat32, {1 << 20}, {1}))
                  .ok());
  for (size_t i = 0; i < y.size(); i += 9973) {
    EXPECT_EQ(y[i], std::max(0.0f, static_cast<float>(i) - 1000)) << i;
  }
}

TEST(ReduceTest, SumOverEachDimOfStridedInput) {
  std::vector<int32_t> in = {1, 2, 3, 4, 5, 6};  // [2, 3]
  bool rows[] = {true, false}, cols[] = {false, true};
  std::vector<int64_t> col_sums(3), row_sums(2);
  ASSERT_TRUE(Reduce(ReduceOp::kSum, View(in, DType::kInt32, {2, 3}, {3, 1}),
                     rows, View(col_sums, DType::kInt64, {1, 3}, {3, 1}))
                  .ok());
  EXPECT_EQ(col_sums, (std::vector<int64_t>{5, 7, 9}));
  ASSERT_TRUE(Reduce(ReduceOp::kSum, View(in, DType::kInt32, {2, 3}, {3, 1}),
                     cols, View(row_sums, DType::kInt64, {2, 1}, {1, 1}))
                  .ok());
  EXPECT_EQ(row_sums, (std::vector<int64_t>{6, 15}));
}

// int64 sums and products wrap around as PyTorch's do (two's complement),
// over a stride-1 run (lanes) and a strided one, without undefined behaviour
// (UBSan runs this in the ASan tree).
TEST(ReduceTest, IntegerSumsAndProductsWrapAround) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> in(20, big);  // [20]: 20 * big wraps to -20
  bool all[] = {true};
  std::vector<int64_t> sum(1), prod(1);
  ASSERT_TRUE(Reduce(ReduceOp::kSum, View(in, DType::kInt64, {20}, {1}), all,
                     View(sum, DType::kInt64, {1}, {1}))
                  .ok());
  EXPECT_EQ(sum[0], -20);
  ASSERT_TRUE(Reduce(ReduceOp::kSum, View(in, DType::kInt64, {10}, {2}), all,
                     View(sum, DType::kInt64, {1}, {1}))
                  .ok());
  EXPECT_EQ(sum[0], -10);
  ASSERT_TRUE(Reduce(ReduceOp::kProd, View(in, DType::kInt64, {3}, {1}), all,
                     View(prod, DType::kInt64, {1}, {1}))
                  .ok());
  EXPECT_EQ(prod[0], big);  // big^3 mod 2^64 = big (big^2 = 1 mod 2^64)
  // A long contiguous run: the sum split over the pool, partials combined.
  std::vector<int64_t> many(1 << 16, big);
  ASSERT_TRUE(Reduce(ReduceOp::kSum, View(many, DType::kInt64, {1 << 16}, {1}),
                     all, View(sum, DType::kInt64, {1}, {1}))
                  .ok());
  EXPECT_EQ(sum[0], -(int64_t{1} << 16));
}

// Note [Outer sums]: reduced dims outside a kept stride-1 run (a bias
// gradient). Each output is its terms added in double in row-major order of
// the reduced dims, exactly as this reference does, so equality is exact;
// widths past one 256-column block and a strided output included.
TEST(ReduceTest, OuterSumsAddRowsInTheColumnWalksOrder) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  std::vector<float> in(5 * 3 * 300);  // [5, 3, 300]
  for (float& v : in) v = normal(gen);
  bool outer[] = {true, true, false}, first[] = {true, false, false};
  std::vector<float> sums(300), means(2 * 3 * 300);
  ASSERT_TRUE(Reduce(ReduceOp::kSum,
                     View(in, DType::kFloat32, {5, 3, 300}, {900, 300, 1}),
                     outer, View(sums, DType::kFloat32, {1, 1, 300}, {0, 0, 1}))
                  .ok());
  for (int c = 0; c < 300; ++c) {
    double acc = 0;
    for (int r = 0; r < 15; ++r) acc += in[r * 300 + c];
    ASSERT_EQ(sums[c], static_cast<float>(acc)) << c;
  }
  // Mean over dim 0 into every other element of a [3, 300] output.
  ASSERT_TRUE(Reduce(ReduceOp::kMean,
                     View(in, DType::kFloat32, {5, 3, 300}, {900, 300, 1}),
                     first,
                     View(means, DType::kFloat32, {1, 3, 300}, {0, 600, 2}))
                  .ok());
  for (int k = 0; k < 3; ++k) {
    for (int c = 0; c < 300; ++c) {
      double acc = 0;
      for (int r = 0; r < 5; ++r) acc += in[r * 900 + k * 300 + c];
      ASSERT_EQ(means[k * 600 + c * 2], static_cast<float>(acc / 5))
          << k << "," << c;
      ASSERT_EQ(means[k * 600 + c * 2 + 1], 0.0f);
    }
  }
}

TEST(ReduceTest, MeanAndMax) {
  std::vector<float> in = {1, 8, 3, 4};
  bool all[] = {true};
  std::vector<float> out(1);
  ASSERT_TRUE(Reduce(ReduceOp::kMean, View(in, DType::kFloat32, {4}, {1}), all,
                     View(out, DType::kFloat32, {1}, {1}))
                  .ok());
  EXPECT_FLOAT_EQ(out[0], 4.0f);
  ASSERT_TRUE(Reduce(ReduceOp::kMax, View(in, DType::kFloat32, {4}, {1}), all,
                     View(out, DType::kFloat32, {1}, {1}))
                  .ok());
  EXPECT_FLOAT_EQ(out[0], 8.0f);
}

// Note [Float sums]: float32 sums accumulate in float lanes over blocks; a
// 10M-element sum (the parallel path) and per-channel sums over NCHW's
// {0, 2, 3} (merged H * W runs) stay within 1e-6 of a double reference.
TEST(ReduceTest, FloatSumsOfLongRunsMatchDouble) {
  const int64_t n = 10'000'000;
  std::vector<float> x(n, 0.1f), out(1);
  bool all[] = {true};
  ASSERT_TRUE(Reduce(ReduceOp::kSum, View(x, DType::kFloat32, {n}, {1}), all,
                     View(out, DType::kFloat32, {1}, {1}))
                  .ok());
  EXPECT_NEAR(out[0], static_cast<double>(0.1f) * n, 1e-6 * 0.1 * n);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0, 1);
  double want = 0;
  for (float& v : x) want += (v = u(rng));
  ASSERT_TRUE(Reduce(ReduceOp::kMean, View(x, DType::kFloat32, {n}, {1}), all,
                     View(out, DType::kFloat32, {1}, {1}))
                  .ok());
  EXPECT_NEAR(out[0], want / n, 1e-6 * want / n);

  // [N, C, H, W] = [50, 4, 100, 500]: each channel sums 50 runs of 50000.
  const int64_t c = 4, hw = 100 * 500, batch = n / (c * hw);
  std::vector<double> ref(c, 0);
  for (int64_t i = 0; i < n; ++i) ref[(i / hw) % c] += x[i];
  std::vector<float> sums(c);
  bool nchw[] = {true, false, true, true};
  ASSERT_TRUE(
      Reduce(
          ReduceOp::kSum,
          View(x, DType::kFloat32, {batch, c, 100, 500}, {c * hw, hw, 500, 1}),
          nchw, View(sums, DType::kFloat32, {1, c, 1, 1}, {c, 1, 1, 1}))
          .ok());
  for (int64_t k = 0; k < c; ++k) EXPECT_NEAR(sums[k], ref[k], 1e-6 * ref[k]);
}

// Reduced dims that are contiguous together reduce as one run; the order
// (argmax's flat index) and strided views are unchanged.
TEST(ReduceTest, MergedRunsKeepOrderAndStrides) {
  std::vector<double> x(2 * 3 * 4 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i));
  bool nchw[] = {true, false, true, true};
  std::vector<double> sums(3), vars(3);
  std::vector<int64_t> args(3);
  const StridedView in = View(x, DType::kFloat64, {2, 3, 4, 5}, {60, 20, 5, 1});
  ASSERT_TRUE(Reduce(ReduceOp::kSum, in, nchw,
                     View(sums, DType::kFloat64, {1, 3, 1, 1}, {3, 1, 1, 1}))
                  .ok());
  ASSERT_TRUE(
      ReduceStat(StatOp::kVar, in, nchw, 0,
                 View(vars, DType::kFloat64, {1, 3, 1, 1}, {3, 1, 1, 1}))
          .ok());
  ASSERT_TRUE(ReduceStat(StatOp::kArgMax, in, nchw, 0,
                         View(args, DType::kInt64, {1, 3, 1, 1}, {3, 1, 1, 1}))
                  .ok());
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, best = -2;
    int64_t arg = -1, r = 0;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t i = 0; i < 20; ++i, ++r) {
        const double v = x[b * 60 + c * 20 + i];
        s += v;
        if (v > best) best = v, arg = r;
      }
    }
    double ss = 0;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t i = 0; i < 20; ++i) {
        const double d = x[b * 60 + c * 20 + i] - s / 40;
        ss += d * d;
      }
    }
    EXPECT_NEAR(sums[c], s, 1e-12);
    EXPECT_NEAR(vars[c], ss / 40, 1e-12);
    EXPECT_EQ(args[c], arg);
  }
  // H and W transposed: no merge, the same sums.
  std::vector<double> t_sums(3);
  ASSERT_TRUE(Reduce(ReduceOp::kSum,
                     View(x, DType::kFloat64, {2, 3, 5, 4}, {60, 20, 1, 5}),
                     nchw,
                     View(t_sums, DType::kFloat64, {1, 3, 1, 1}, {3, 1, 1, 1}))
                  .ok());
  for (int64_t c = 0; c < 3; ++c) EXPECT_NEAR(t_sums[c], sums[c], 1e-12);
}

TEST(MatmulTest, BlasAndTransposedOperandsMatchHandComputed) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};     // [2, 3]
  std::vector<float> b = {7, 8, 9, 10, 11, 12};  // [3, 2]
  std::vector<float> out(4);
  ASSERT_TRUE(BatchedMatmul(View(a, DType::kFloat32, {1, 2, 3}, {0, 3, 1}),
                            View(b, DType::kFloat32, {1, 3, 2}, {0, 2, 1}),
                            View(out, DType::kFloat32, {1, 2, 2}, {0, 2, 1}))
                  .ok());
  EXPECT_EQ(out, (std::vector<float>{58, 64, 139, 154}));
  // a^T (3x2) @ a (2x3) with a^T given as a transposed view.
  std::vector<float> out2(9);
  ASSERT_TRUE(BatchedMatmul(View(a, DType::kFloat32, {1, 3, 2}, {0, 1, 3}),
                            View(a, DType::kFloat32, {1, 2, 3}, {0, 3, 1}),
                            View(out2, DType::kFloat32, {1, 3, 3}, {0, 3, 1}))
                  .ok());
  EXPECT_EQ(out2, (std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45}));
}

TEST(MatmulTest, IntegerFallback) {
  std::vector<int64_t> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, out(4);
  ASSERT_TRUE(BatchedMatmul(View(a, DType::kInt64, {1, 2, 2}, {0, 2, 1}),
                            View(b, DType::kInt64, {1, 2, 2}, {0, 2, 1}),
                            View(out, DType::kInt64, {1, 2, 2}, {0, 2, 1}))
                  .ok());
  EXPECT_EQ(out, (std::vector<int64_t>{19, 22, 43, 50}));
}

TEST(RandomTest, ReproducibleAndRoughlyNormal) {
  std::vector<double> x(100000), y(100000);
  ASSERT_TRUE(FillRandom(Distribution::kNormal, 42, 0,
                         View(x, DType::kFloat64, {100000}, {1}))
                  .ok());
  ASSERT_TRUE(FillRandom(Distribution::kNormal, 42, 0,
                         View(y, DType::kFloat64, {100000}, {1}))
                  .ok());
  EXPECT_EQ(x, y);
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  // Standard error of the mean is 1/sqrt(n) ~ 0.003: 5 sigma bounds.
  EXPECT_NEAR(mean, 0.0, 0.016);
  EXPECT_NEAR(var, 1.0, 0.03);
  ASSERT_TRUE(FillRandom(Distribution::kNormal, 43, 0,
                         View(y, DType::kFloat64, {100000}, {1}))
                  .ok());
  EXPECT_NE(x, y);
}

}  // namespace
}  // namespace cpu
}  // namespace tensord
