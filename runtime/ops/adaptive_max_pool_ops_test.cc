// adaptive_max_pool2d/3d, their backward rows, max_pool3d_with_indices_
// backward and avg_pool2d's divisor_override through the op table on the
// CPU: values and indices against a plain reference of PyTorch's rule
// (windows [floor(i * in / out), ceil((i + 1) * in / out)), the first
// maximum, the last NaN) on data with ties and NaNs, outputs smaller and
// larger than the input, batched and unbatched, non-contiguous input,
// float32, float64 and bfloat16; the backwards add at the indices and skip
// those outside the plane; what PyTorch refuses is INVALID_ARGUMENT. Against
// PyTorch itself: tests/python_torch/test_adaptive_max_pool.py.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;

class AdaptiveMaxPoolOpsTest : public CpuOpTest {
 protected:
  // A `d` tensor of `shape` whose values come from a small set (ties), some
  // NaN, stored transposed (dims 0 and 1 swapped in memory).
  Tensor Input(const Shape& shape, DType d) {
    Shape swapped = shape;
    std::swap(swapped[0], swapped[1]);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = i % 13 == 5 ? NAN : static_cast<float>(i * 7 % 5);
    }
    const AttrMap swap = {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}};
    Tensor x = Run1("to", {From(v, DType::kFloat32, swapped)}, {{"dtype", d}});
    return Run1("transpose", {x}, swap);
  }
};

struct Pooled {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

// PyTorch's adaptive max pooling of row-major planes [planes, D, H, W] to
// [od, oh, ow]: the scan order and rule of its CPU kernels.
Pooled Reference(const std::vector<double>& x, int64_t planes, const I& in,
                 const I& out) {
  auto start = [](int64_t i, int64_t n, int64_t o) { return i * n / o; };
  auto end = [](int64_t i, int64_t n, int64_t o) {
    return ((i + 1) * n + o - 1) / o;
  };
  const int64_t d = in[0], h = in[1], w = in[2];
  Pooled r;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t t = 0; t < out[0]; ++t) {
      for (int64_t i = 0; i < out[1]; ++i) {
        for (int64_t j = 0; j < out[2]; ++j) {
          double best = -INFINITY;
          int64_t at = (start(t, d, out[0]) * h + start(i, h, out[1])) * w +
                       start(j, w, out[2]);
          for (int64_t u = start(t, d, out[0]); u < end(t, d, out[0]); ++u) {
            for (int64_t a = start(i, h, out[1]); a < end(i, h, out[1]); ++a) {
              for (int64_t b = start(j, w, out[2]); b < end(j, w, out[2]);
                   ++b) {
                const int64_t k = (u * h + a) * w + b;
                const double v = x[p * d * h * w + k];
                if (v > best || std::isnan(v)) best = v, at = k;
              }
            }
          }
          r.values.push_back(best);
          r.indices.push_back(at);
        }
      }
    }
  }
  return r;
}

bool SameOrBothNaN(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

TEST_F(AdaptiveMaxPoolOpsTest, ValuesIndicesAndGradientsArePyTorchs) {
  struct Case {
    int spatial;
    Shape shape;
    I output_size;  // as given to the row
    I out3;         // [od, oh, ow] of the reference
  };
  const std::vector<Case> cases = {
      {2, {2, 3, 7, 11}, {4, 5}, {1, 4, 5}},
      {2, {3, 4, 10}, {8, 5}, {1, 8, 5}},    // output taller than the input
      {2, {2, 3, 5, 6}, {3}, {1, 3, 3}},     // one int for both
      {2, {2, 3, 4, 3}, {4, 3}, {1, 4, 3}},  // the identity
      {2, {1, 2, 6, 5}, {1, 1}, {1, 1, 1}},  // global
      {3, {3, 3, 4, 4, 6}, {2, 3, 4}, {2, 3, 4}},
      {3, {3, 4, 3, 5}, {5, 2, 7}, {5, 2, 7}},  // unbatched, larger
      {3, {1, 2, 4, 3, 5}, {1}, {1, 1, 1}},
  };
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    for (const Case& c : cases) {
      const int spatial = c.spatial;
      const char* op =
          spatial == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
      SCOPED_TRACE(testing::Message() << DTypeName(dt) << " " << op << " "
                                      << ShapeToString(c.shape));
      const Tensor x = Input(c.shape, dt);
      auto r = Run(op, {x}, {{"output_size", c.output_size}});
      ASSERT_TRUE(r.ok()) << r.status();
      const Tensor &y = (*r)[0], &at = (*r)[1];
      const int n = static_cast<int>(c.shape.size());
      I in3 = {1, c.shape[n - 2], c.shape[n - 1]};
      if (spatial == 3) in3[0] = c.shape[n - 3];
      int64_t planes = 1;
      for (int i = 0; i < n - spatial; ++i) planes *= c.shape[i];
      Shape want_shape(c.shape.begin(), c.shape.end() - spatial);
      for (int i = 3 - spatial; i < 3; ++i) want_shape.push_back(c.out3[i]);
      ASSERT_EQ(y.shape(), want_shape);
      ASSERT_EQ(at.shape(), want_shape);
      ASSERT_EQ(y.dtype(), dt);
      ASSERT_EQ(at.dtype(), DType::kInt64);
      const Pooled want = Reference(Doubles(x), planes, in3, c.out3);
      const std::vector<double> got = Doubles(y);
      ASSERT_EQ(Ints64(at), want.indices);
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_TRUE(SameOrBothNaN(got[k], want.values[k])) << k;
      }
      // The backward: each gradient added at its index, in output order.
      std::vector<float> gv(y.numel());
      for (size_t k = 0; k < gv.size(); ++k) gv[k] = 0.25f * (k % 9 + 1);
      const Tensor g =
          Run1("to", {From(gv, DType::kFloat32, y.shape())}, {{"dtype", dt}});
      const std::string bwd = std::string(op) + "_backward";
      const Tensor gi = Run1(bwd, {g, x, at});
      ASSERT_EQ(gi.shape(), x.shape());
      ASSERT_EQ(gi.dtype(), dt);
      const int64_t vol = in3[0] * in3[1] * in3[2], ovol = y.numel() / planes;
      std::vector<double> want_gi(x.numel(), 0);
      const std::vector<double> gd = Doubles(g);
      for (int64_t k = 0; k < y.numel(); ++k) {
        want_gi[k / ovol * vol + want.indices[k]] += gd[k];
      }
      EXPECT_EQ(Doubles(gi), want_gi);
    }
  }
}

TEST_F(AdaptiveMaxPoolOpsTest, ARowOfMinusInfinityKeepsItsFirstPosition) {
  const Tensor x =
      From(std::vector<float>(12, -INFINITY), DType::kFloat32, {1, 3, 4});
  auto r = Run("adaptive_max_pool2d", {x}, {{"output_size", I{2, 2}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Ints64((*r)[1]), (I{0, 2, 4, 6}));
}

TEST_F(AdaptiveMaxPoolOpsTest, BackwardsSkipIndicesOutsideThePlane) {
  const Tensor x =
      From(std::vector<float>(2 * 8, 1), DType::kFloat32, {1, 2, 2, 2, 2});
  const Tensor g =
      From(std::vector<float>{1, 2, 3, 4}, DType::kFloat32, {1, 2, 1, 1, 2});
  const Tensor at =
      From(std::vector<int64_t>{7, 8, -1, 3}, DType::kInt64, {1, 2, 1, 1, 2});
  std::vector<double> want(16, 0);
  want[7] = 1, want[8 + 3] = 4;
  EXPECT_EQ(Doubles(Run1("adaptive_max_pool3d_backward", {g, x, at})), want);
  EXPECT_EQ(Doubles(Run1("max_pool3d_with_indices_backward", {g, x, at},
                         {{"kernel_size", I{2, 2, 1}}})),
            want);
}

TEST_F(AdaptiveMaxPoolOpsTest, RefusesWhatPyTorchRefuses) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto code = [&](const char* op, const Shape& shape, I output_size,
                  DType dt = DType::kFloat32) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    Tensor x = From(std::vector<float>(n, 0), DType::kFloat32, shape);
    if (dt != DType::kFloat32) x = Run1("to", {x}, {{"dtype", dt}});
    return Run(op, {x}, {{"output_size", output_size}}).status().code();
  };
  EXPECT_EQ(code("adaptive_max_pool2d", {2, 4}, {1}), kInvalid);
  EXPECT_EQ(code("adaptive_max_pool2d", {1, 1, 2, 2, 2}, {1}), kInvalid);
  EXPECT_EQ(code("adaptive_max_pool2d", {1, 2, 0, 3}, {1}), kInvalid);
  EXPECT_EQ(code("adaptive_max_pool2d", {1, 2, 3, 3}, {1, 2, 3}), kInvalid);
  EXPECT_EQ(code("adaptive_max_pool2d", {1, 2, 3, 3}, {-1, 2}), kInvalid);
  EXPECT_EQ(code("adaptive_max_pool2d", {1, 2, 3, 3}, {2}, DType::kInt64),
            kInvalid);
  EXPECT_EQ(code("adaptive_max_pool3d", {2, 3, 4}, {1}), kInvalid);
  // An empty batch, and an empty output, are fine (as PyTorch).
  EXPECT_EQ(code("adaptive_max_pool2d", {0, 2, 3, 3}, {2}),
            absl::StatusCode::kOk);
  EXPECT_EQ(code("adaptive_max_pool3d", {1, 2, 3, 3, 3}, {0, 2, 2}),
            absl::StatusCode::kOk);
  // Backward: grad_output and indices must agree with self and each other.
  const Tensor x =
      From(std::vector<float>(16, 0), DType::kFloat32, {1, 2, 2, 2, 2});
  const Tensor g =
      From(std::vector<float>(4, 0), DType::kFloat32, {1, 2, 1, 1, 2});
  const Tensor at =
      From(std::vector<int64_t>(4, 0), DType::kInt64, {1, 2, 1, 1, 2});
  const Tensor at3 = From(std::vector<int64_t>(4, 0), DType::kInt64, {1, 2, 2});
  const Tensor g_other =
      From(std::vector<float>(4, 0), DType::kFloat32, {1, 4, 1, 1, 1});
  for (const auto& in : std::vector<std::vector<Tensor>>{
           {g, x, g}, {g, x, at3}, {g_other, x, at}, {at, x, at}}) {
    EXPECT_EQ(Run("adaptive_max_pool3d_backward", in).status().code(),
              kInvalid);
  }
}

// divisor_override: every window's sum over the override, any sign, with
// or without count_include_pad; the backward shares each gradient the same.
TEST_F(AdaptiveMaxPoolOpsTest, AvgPoolDivisorOverride) {
  std::vector<float> v(2 * 5 * 5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 2;
  const Tensor x = From(v, DType::kFloat32, {2, 5, 5});
  for (int64_t divisor : {int64_t{3}, int64_t{-2}}) {
    for (bool include_pad : {true, false}) {
      const AttrMap attrs = {{"kernel_size", I{3}},
                             {"stride", I{2}},
                             {"padding", I{1}},
                             {"ceil_mode", true},
                             {"count_include_pad", include_pad},
                             {"divisor_override", divisor}};
      const std::vector<double> y = Doubles(Run1("avg_pool2d", {x}, attrs));
      ASSERT_EQ(y.size(), 2u * 3 * 3);
      std::vector<double> gi_want(v.size(), 0);
      for (int64_t p = 0; p < 2; ++p) {
        for (int64_t i = 0; i < 3; ++i) {
          for (int64_t j = 0; j < 3; ++j) {
            double s = 0;
            for (int64_t r = 2 * i - 1; r < 2 * i + 2; ++r) {
              for (int64_t c = 2 * j - 1; c < 2 * j + 2; ++c) {
                if (r < 0 || r >= 5 || c < 0 || c >= 5) continue;
                s += v[p * 25 + r * 5 + c];
                gi_want[p * 25 + r * 5 + c] += 1.0 / divisor;
              }
            }
            EXPECT_NEAR(y[p * 9 + i * 3 + j], s / divisor, 1e-6);
          }
        }
      }
      const Tensor g =
          From(std::vector<float>(18, 1), DType::kFloat32, {2, 3, 3});
      const std::vector<double> gi =
          Doubles(Run1("avg_pool2d_backward", {g, x}, attrs));
      ASSERT_EQ(gi.size(), gi_want.size());
      for (size_t k = 0; k < gi.size(); ++k) {
        EXPECT_NEAR(gi[k], gi_want[k], 1e-6) << k;
      }
    }
  }
}

}  // namespace
}  // namespace tensord
