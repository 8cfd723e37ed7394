// _ctc_loss and _ctc_loss_backward through the op table on the CPU against
// alignments counted by hand: one frame and one label (the loss is
// -log p(label)), two frames and one label (three paths), an empty target
// (blanks only), a repeated label that needs a blank between; the
// gradient of a one-frame loss is softmax minus one-hot (ATen's formula is
// the gradient w.r.t. the logits); bad lengths and targets are
// INVALID_ARGUMENT. Against PyTorch: tests/python_torch/test_ctc_loss.py.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;
using V = std::vector<double>;

class CtcLossOpsTest : public CpuOpTest {
 protected:
  // log_probs [T, 1, C] from per-frame probabilities.
  Tensor LogProbs(const std::vector<V>& p) {
    V lp;
    for (const V& frame : p) {
      for (double v : frame) lp.push_back(std::log(v));
    }
    const int64_t t = p.size(), c = p[0].size();
    return From(lp, DType::kFloat64, {t, 1, c});
  }
  Tensor Idx(const I& v, const Shape& s) { return From(v, DType::kInt64, s); }
  double Loss(const std::vector<V>& p, const I& target, int64_t il,
              int64_t blank = 0) {
    const int64_t tl = target.size();
    const auto out = Doubles(Run1(
        "_ctc_loss",
        {LogProbs(p),
         Idx(target.empty() ? I{0} : target, {1, std::max<int64_t>(tl, 1)}),
         Idx({il}, {1}), Idx({tl}, {1})},
        {{"max_target_length", std::max<int64_t>(tl, 1)}, {"blank", blank}}));
    return out[0];
  }
};

TEST_F(CtcLossOpsTest, LossesOfHandCountedAlignments) {
  const V f0 = {0.5, 0.3, 0.2}, f1 = {0.1, 0.6, 0.3};  // blank = class 0
  EXPECT_NEAR(Loss({f0}, {1}, 1), -std::log(0.3), 1e-12);
  // Target [1] in two frames: 1 1, 0 1, 1 0.
  EXPECT_NEAR(Loss({f0, f1}, {1}, 2),
              -std::log(0.3 * 0.6 + 0.5 * 0.6 + 0.3 * 0.1), 1e-12);
  // Only the first frame counts when input_length is 1.
  EXPECT_NEAR(Loss({f0, f1}, {1}, 1), -std::log(0.3), 1e-12);
  // An empty target: blanks only.
  EXPECT_NEAR(Loss({f0, f1}, {}, 2), -std::log(0.5 * 0.1), 1e-12);
  // 1 1 in two frames is impossible (the repeat needs a blank between).
  EXPECT_TRUE(std::isinf(Loss({f0, f1}, {1, 1}, 2)));
  // 1 2 in two frames: one path; with blank = 2 the target 1 0 likewise.
  EXPECT_NEAR(Loss({f0, f1}, {1, 2}, 2), -std::log(0.3 * 0.3), 1e-12);
  EXPECT_NEAR(Loss({f0, f1}, {1, 0}, 2, 2), -std::log(0.3 * 0.1), 1e-12);
}

TEST_F(CtcLossOpsTest, OneFrameGradientIsSoftmaxMinusOneHot) {
  const V p = {0.5, 0.3, 0.2};
  const Tensor lp = LogProbs({p}), targets = Idx({2}, {1, 1});
  const Tensor il = Idx({1}, {1}), tl = Idx({1}, {1});
  auto fwd = Run("_ctc_loss", {lp, targets, il, tl},
                 {{"max_target_length", int64_t{1}}});
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  const Tensor grad = From(V{3.0}, DType::kFloat64, {1});
  const auto g = Doubles(Run1(
      "_ctc_loss_backward", {grad, lp, targets, il, tl, (*fwd)[0], (*fwd)[1]}));
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(g[c], 3 * (p[c] - (c == 2 ? 1 : 0)), 1e-12) << c;
  }
}

TEST_F(CtcLossOpsTest, RefusesBadLengthsAndTargets) {
  const Tensor lp = LogProbs({{0.5, 0.5}, {0.5, 0.5}});
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto code = [&](const I& target, int64_t il, int64_t tl, int64_t s) {
    return Run("_ctc_loss",
               {lp, Idx(target, {1, static_cast<int64_t>(target.size())}),
                Idx({il}, {1}), Idx({tl}, {1})},
               {{"max_target_length", s}})
        .status()
        .code();
  };
  EXPECT_EQ(code({1}, 2, 1, 1), absl::StatusCode::kOk);
  EXPECT_EQ(code({2}, 2, 1, 1), kInvalid);     // class 2 of 2
  EXPECT_EQ(code({1}, 3, 1, 1), kInvalid);     // input_length past T
  EXPECT_EQ(code({1}, 2, 2, 2), kInvalid);     // past the padded targets
  EXPECT_EQ(code({1, 1}, 2, 2, 1), kInvalid);  // past max_target_length
  EXPECT_EQ(
      Run("_ctc_loss", {lp, Idx({1}, {1, 1}), Idx({2}, {1}), Idx({1}, {1})},
          {{"max_target_length", int64_t{1}}, {"blank", int64_t{2}}})
          .status()
          .code(),
      kInvalid);  // blank outside the classes
}

}  // namespace
}  // namespace tensord
