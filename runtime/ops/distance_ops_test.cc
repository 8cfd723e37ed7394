// cdist, pdist, their backward rows and histc against values PyTorch gives
// (torch.cdist, torch.nn.functional.pdist, aten._cdist_backward /
// _pdist_backward, torch.histc on the CPU): every norm, broadcast batch dims,
// a non-contiguous input, empty inputs, histc's range rules, and the errors.
// The sweep against PyTorch is tests/python_torch/test_distance.py.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

class DistanceOpsTest : public CpuOpTest {
 protected:
  Tensor D(const std::vector<double>& v, Shape shape) {
    return From(v, DType::kFloat64, shape);
  }
  absl::StatusOr<Tensor> Run1(const std::string& name, std::vector<Tensor> in,
                              AttrMap attrs = {}) {
    auto out = Run(name, std::move(in), std::move(attrs));
    if (!out.ok()) return out.status();
    return (*out)[0];
  }
  template <typename T>
  static std::vector<T> Values(const Tensor& t) {
    EXPECT_TRUE(t.view().is_contiguous());
    const T* p = t.view().ptr<const T>();
    return std::vector<T>(p, p + t.numel());
  }
  static void ExpectNear(const std::vector<double>& got,
                         const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
    }
  }
};

TEST_F(DistanceOpsTest, CdistEveryNorm) {
  const Tensor x1 = D({0, 0, 3, 4}, {2, 2});
  const Tensor x2 = D({0, 0, 1, -1, 3, 4}, {3, 2});
  struct Want {
    double p;
    std::vector<double> values;
  };
  const std::vector<Want> wants = {
      {0, {0, 2, 2, 2, 2, 0}},
      {1, {0, 2, 7, 7, 7, 0}},
      {2, {0, std::sqrt(2.0), 5, 5, std::sqrt(29.0), 0}},
      {3,
       {0, std::cbrt(2.0), std::cbrt(91.0), std::cbrt(91.0), std::cbrt(133.0),
        0}},
      {0.5,
       {0, 4, std::pow(std::sqrt(3.0) + 2, 2), std::pow(std::sqrt(3.0) + 2, 2),
        std::pow(std::sqrt(2.0) + std::sqrt(5.0), 2), 0}},
      {kInf, {0, 1, 4, 4, 5, 0}}};
  for (const Want& w : wants) {
    SCOPED_TRACE(testing::Message() << "p=" << w.p);
    auto out = Run1("cdist", {x1, x2}, {{"p", w.p}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->shape(), (Shape{2, 3}));
    ExpectNear(Values<double>(*out), w.values);
  }
}

TEST_F(DistanceOpsTest, CdistBroadcastsBatchDimsAndReadsViews) {
  // x1 [2, 1, 2] against x2 [3, 2] -> [2, 1, 3].
  const Tensor x1 = D({0, 0, 3, 4}, {2, 1, 2});
  const Tensor x2 = D({0, 0, 1, -1, 3, 4}, {3, 2});
  auto out = Run1("cdist", {x1, x2}, {{"p", 1.0}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{2, 1, 3}));
  ExpectNear(Values<double>(*out), {0, 2, 7, 7, 7, 0});
  // x2 through a transposed view: [[0, 1, 3], [0, -1, 4]]^T.
  auto t = Run1("transpose", {D({0, 1, 3, 0, -1, 4}, {2, 3})},
                {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ASSERT_TRUE(t.ok()) << t.status();
  out = Run1("cdist", {x1, *t}, {{"p", 1.0}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(Values<double>(*out), {0, 2, 7, 7, 7, 0});
}

TEST_F(DistanceOpsTest, CdistEmptyAndErrors) {
  auto out = Run1("cdist", {D({}, {0, 2}), D({1, 2}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{0, 1}));
  out = Run1("cdist", {D({}, {2, 0}), D({}, {3, 0})});  // no columns: zeros
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(Values<double>(*out), std::vector<double>(6, 0.0));
  EXPECT_FALSE(Run1("cdist", {D({1, 2}, {1, 2}), D({1, 2, 3}, {1, 3})}).ok());
  EXPECT_FALSE(Run1("cdist", {D({1, 2}, {2}), D({1, 2}, {1, 2})}).ok());
  EXPECT_FALSE(
      Run1("cdist", {D({1, 2}, {1, 2}), D({1, 2}, {1, 2})}, {{"p", -1.0}})
          .ok());
  auto ints =
      Run1("cdist", {From(std::vector<int64_t>{1, 2}, DType::kInt64, {1, 2}),
                     D({1, 2}, {1, 2})});
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().message().find("floating-point"), std::string::npos);
}

TEST_F(DistanceOpsTest, CdistBackward) {
  // d/dx1 of sum_j g_ij |x1_i - x2_j|_p for x1 [[0, 0], [3, 4]], x2 [[0, 0],
  // [1, -1]], g = [[1, 2], [3, 4]].
  const Tensor x1 = D({0, 0, 3, 4}, {2, 2});
  const Tensor x2 = D({0, 0, 1, -1}, {2, 2});
  const Tensor g = D({1, 2, 3, 4}, {2, 2});
  struct Want {
    double p;
    std::vector<double> grad;
  };
  const std::vector<Want> wants = {
      {0, {0, 0, 0, 0}},
      // row 0: pair (0,0) differs by 0 (sign 0); pair (0,1): d = (-1, 1).
      {1, {-2, 2, 3 + 4, 3 + 4}},
      // p=2: d/dist; row 0 pair 1: (-1, 1)/sqrt2 * 2; row 1: 3*(3,4)/5 +
      // 4*(2,5)/sqrt(29).
      {2,
       {-2 / std::sqrt(2.0), 2 / std::sqrt(2.0),
        3 * 3 / 5.0 + 4 * 2 / std::sqrt(29.0),
        3 * 4 / 5.0 + 4 * 5 / std::sqrt(29.0)}},
      // inf: every coordinate at the max; row 0 pair 1 both tie at 1.
      {kInf, {-2, 2, 0, 3 + 4}}};
  for (const Want& w : wants) {
    SCOPED_TRACE(testing::Message() << "p=" << w.p);
    auto dist = Run1("cdist", {x1, x2}, {{"p", w.p}});
    ASSERT_TRUE(dist.ok()) << dist.status();
    auto out = Run1("_cdist_backward", {g, x1, x2, *dist}, {{"p", w.p}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(Values<double>(*out), w.grad);
  }
}

TEST_F(DistanceOpsTest, PdistAndItsBackward) {
  const Tensor x = D({0, 0, 3, 4, 6, 8}, {3, 2});
  auto out = Run1("pdist", {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{3}));
  ExpectNear(Values<double>(*out), {5, 10, 5});
  // p=2: row i's gradient sums g_ij (x_i - x_j) / dist_ij over j != i.
  const Tensor g = D({1, 2, 3}, {3});
  auto grad = Run1("_pdist_backward", {g, x, *out});
  ASSERT_TRUE(grad.ok()) << grad.status();
  ExpectNear(Values<double>(*grad),
             {-0.6 - 2 * 0.6, -0.8 - 2 * 0.8, 0.6 - 3 * 0.6, 0.8 - 3 * 0.8,
              2 * 0.6 + 3 * 0.6, 2 * 0.8 + 3 * 0.8});
  out = Run1("pdist", {D({1, 2}, {1, 2})});  // one row: no pairs
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{0}));
  EXPECT_FALSE(Run1("pdist", {D({1, 2}, {2})}).ok());
  EXPECT_FALSE(Run1("pdist", {x}, {{"p", -2.0}}).ok());
}

TEST_F(DistanceOpsTest, HistcRanges) {
  const Tensor x =
      From(std::vector<float>{1, 2, 1, 3, -1, NAN}, DType::kFloat32, {6});
  // [0, 3] in 4 bins: 3 (== max) counts in the last bin; -1 and NaN nowhere.
  auto out =
      Run1("histc", {x}, {{"bins", int64_t{4}}, {"min", 0.0}, {"max", 3.0}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), DType::kFloat32);
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{0, 2, 1, 1}));
  // min == max: the data's range, which NaN makes non-finite.
  auto bad = Run1("histc", {x}, {{"bins", int64_t{4}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not finite"), std::string::npos);
  const Tensor y =
      From(std::vector<float>{1, 2, 1, 3, -1}, DType::kFloat32, {5});
  out = Run1("histc", {y}, {{"bins", int64_t{4}}});  // [-1, 3]
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{1, 0, 2, 2}));
  // A single value: [v - 1, v + 1].
  out = Run1("histc", {From(std::vector<float>{2, 2}, DType::kFloat32, {2})},
             {{"bins", int64_t{2}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{0, 2}));
  out = Run1("histc", {From(std::vector<float>{}, DType::kFloat32, {0})},
             {{"bins", int64_t{3}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{0, 0, 0}));
  EXPECT_FALSE(Run1("histc", {y}, {{"bins", int64_t{0}}}).ok());
  EXPECT_FALSE(Run1("histc", {y}, {{"min", 2.0}, {"max", 1.0}}).ok());
  EXPECT_FALSE(Run1("histc", {y}, {{"min", 0.0}, {"max", kInf}}).ok());
  // Bounds past float32's range are infinite there (PyTorch converts them).
  auto wide = Run1("histc", {y}, {{"min", -1e308}, {"max", 0.0}});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(
      std::string(wide.status().message()).find("is not finite in float32"),
      std::string::npos);
  // A float64 range wider than the largest double: x - min and the width
  // overflow to inf, and inf / inf (NaN) goes to bin 0 instead of an int64
  // conversion C++ leaves undefined (UBSan checks it in the ASan tree).
  auto huge =
      Run1("histc",
           {From(std::vector<double>{-1e308, 0, 1e308}, DType::kFloat64, {3})},
           {{"bins", int64_t{2}}, {"min", -1e308}, {"max", 1e308}});
  ASSERT_TRUE(huge.ok()) << huge.status();
  EXPECT_EQ(Values<double>(*huge), (std::vector<double>{3, 0}));
  EXPECT_FALSE(
      Run1("histc", {From(std::vector<int64_t>{1}, DType::kInt64, {1})}).ok());
}

}  // namespace
}  // namespace tensord
