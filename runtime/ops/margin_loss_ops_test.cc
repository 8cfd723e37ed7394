// multi_margin_loss_backward and multilabel_margin_loss_backward through the
// op table on the CPU, against the hinges worked out by hand: only active
// hinges (margin - x[y] + x[i] > 0) move the gradient, by 1/C (p = 1) or
// 2 z / C (p = 2), times the target's class weight, over N for the mean and
// per row for "none"; multilabel targets stop at the first -1; out-of-range
// targets and misshapen calls are INVALID_ARGUMENT. Against PyTorch:
// tests/python_torch/test_margin_loss.py.
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;
using V = std::vector<double>;

class MarginLossOpsTest : public CpuOpTest {
 protected:
  Tensor F64(const V& v, const Shape& s) { return From(v, DType::kFloat64, s); }
  Tensor I64(const I& v, const Shape& s) { return From(v, DType::kInt64, s); }
};

TEST_F(MarginLossOpsTest, MultiMarginOnlyActiveHingesCount) {
  // Row 0: y = 1, x = [1, 3, 2.5], margin 1: z = [-1, -, 0.5], one hinge.
  // Row 1: y = 0, x = [0, 0.5, -2]: z = [-, 1.5, -1], one hinge.
  const V x = {1, 3, 2.5, 0, 0.5, -2};
  const double c = 3, z0 = 1 - 3 + 2.5, z1 = 1 - 0 + 0.5;
  for (int p : {1, 2}) {
    const V w = {2, 0.5, 1};  // the target's weight scales its row
    const auto g = Doubles(Run1(
        "multi_margin_loss_backward",
        {F64({4}, {}), F64(x, {2, 3}), I64({1, 0}, {2}), F64(w, {3})},
        {{"p", static_cast<double>(p)}, {"reduction", std::string("mean")}}));
    const double h0 = (p == 1 ? 1 : 2 * z0) * w[1] * 4 / (2 * c);
    const double h1 = (p == 1 ? 1 : 2 * z1) * w[0] * 4 / (2 * c);
    const V want = {0, -h0, h0, -h1, h1, 0};
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(g[i], want[i], 1e-12) << "p " << p << " at " << i;
    }
  }
}

TEST_F(MarginLossOpsTest, MultiMarginNoneScalesEachRow) {
  const V x = {1, 3, 2.5, 0, 0.5, -2};
  const auto g = Doubles(Run1("multi_margin_loss_backward",
                              {F64({10, -1}, {2}), F64(x, {2, 3}),
                               I64({1, 0}, {2})},
                              {{"reduction", std::string("none")}}));
  const V want = {0, -10 / 3.0, 10 / 3.0, 1 / 3.0, -1 / 3.0, 0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12);
}

TEST_F(MarginLossOpsTest, MultilabelTargetsStopAtTheFirstMinusOne) {
  // Targets {1, 2} (the 0 after -1 is ignored), non-targets {0, 3}. With
  // x[0] = -0.5 the hinge of target 1 against class 0 is inactive:
  // 1 - 0.9 - 0.5 < 0; the other three are active.
  const V x = {-0.5, 0.9, 0.4, 0.2};
  const V is_target = {0, 1, 1, 0};
  const auto g = Doubles(Run1(
      "multilabel_margin_loss_backward",
      {F64({1}, {}), F64(x, {4}), I64({1, 2, -1, 0}, {4}), F64(is_target, {4})},
      {{"reduction", std::string("sum")}}));
  const V want = {1 / 4.0, -1 / 4.0, -2 / 4.0, 2 / 4.0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-12);
}

TEST_F(MarginLossOpsTest, RefusesBadTargetsAndShapes) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const Tensor x = F64({1, 2, 3, 4, 5, 6}, {2, 3}), go = F64({1}, {});
  auto code = [&](const std::string& op, std::vector<Tensor> in,
                  AttrMap a = {}) {
    return Run(op, std::move(in), std::move(a)).status().code();
  };
  EXPECT_EQ(code("multi_margin_loss_backward", {go, x, I64({0, 3}, {2})}),
            kInvalid);  // a target past C
  EXPECT_EQ(code("multi_margin_loss_backward", {go, x, I64({0}, {1})}),
            kInvalid);  // one target for two rows
  EXPECT_EQ(code("multi_margin_loss_backward", {go, x, I64({0, 1}, {2})},
                 {{"p", 3.0}}),
            kInvalid);
  EXPECT_EQ(code("multi_margin_loss_backward", {go, x, I64({0, 1}, {2})},
                 {{"reduction", std::string("none")}}),
            kInvalid);  // one grad_output value for two rows
  const Tensor is_t = F64(V(6, 0.0), {2, 3});
  EXPECT_EQ(code("multilabel_margin_loss_backward",
                 {go, x, I64({0, -2, 1, 0, 1, 2}, {2, 3}), is_t}),
            kInvalid);  // -2 is no class and no end mark
  EXPECT_EQ(code("multilabel_margin_loss_backward",
                 {go, x, I64({0, 1, 2}, {3}), is_t}),
            kInvalid);
}

}  // namespace
}  // namespace tensord
