// cross_entropy.h in float64: the forward against log_softmax + nll written
// out directly (PyTorch's definition, label smoothing and class weights
// included), the backward against central finite differences, for every
// reduction, an ignored target and [N, C, S] logits, also on
// log-probabilities (nll_loss); a target out of range
// is an error; float32 against float64 over the AVX2 rows and their tails.
#include "kernels/cpu/cross_entropy.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/test_views.h"

namespace tensord {
namespace cpu {
namespace {

using testing::Random;
using testing::View;

struct Case {
  int64_t n, c, s;
  LossReduction reduction;
  double smoothing;
  bool weighted;
  bool log_probs = false;  // nll_loss: x is already log-probabilities
};

// The loss by the textbook formula: logp = x - log(sum exp x) per position
// (logp = x for log_probs).
std::vector<double> Reference(const std::vector<double>& x,
                              const std::vector<int64_t>& t,
                              const std::vector<double>* w, const Case& k,
                              int64_t ignore) {
  std::vector<double> per(k.n * k.s);
  double total = 0, sum = 0;
  for (int64_t nn = 0; nn < k.n; ++nn) {
    for (int64_t ss = 0; ss < k.s; ++ss) {
      auto at = [&](int64_t c) { return x[(nn * k.c + c) * k.s + ss]; };
      double z = 0;
      for (int64_t c = 0; c < k.c; ++c) z += std::exp(at(c));
      if (k.log_probs) z = 1;
      const int64_t i = nn * k.s + ss, ti = t[i];
      if (ti == ignore) continue;
      const double wt = w ? (*w)[ti] : 1;
      double smooth = 0;
      for (int64_t c = 0; c < k.c; ++c)
        smooth -= (w ? (*w)[c] : 1) * (at(c) - std::log(z));
      per[i] = (1 - k.smoothing) * -wt * (at(ti) - std::log(z)) +
               k.smoothing / k.c * smooth;
      total += wt, sum += per[i];
    }
  }
  if (k.reduction == LossReduction::kNone) return per;
  return {k.reduction == LossReduction::kSum ? sum : sum / total};
}

class CrossEntropyTest : public ::testing::TestWithParam<Case> {};

TEST_P(CrossEntropyTest, FormulaAndFiniteDifferences) {
  const Case k = GetParam();
  const int64_t rows = k.n * k.s, ignore = -100;
  std::mt19937 rng(9);
  auto x = Random(k.n * k.c * k.s, &rng, -2, 2);
  auto w = Random(k.c, &rng, 0.2, 2);
  std::vector<int64_t> t(rows);
  for (int64_t i = 0; i < rows; ++i) t[i] = (i * 7 + 3) % k.c;
  t[1] = ignore;
  const bool none = k.reduction == LossReduction::kNone;
  const CrossEntropyGeometry g{k.n,         k.c,         k.s,        ignore,
                               k.smoothing, k.reduction, k.log_probs};
  const StridedView wv = k.weighted ? View(w, {k.c}) : StridedView{nullptr};
  const std::vector<int64_t> xs = {k.n, k.c, k.s};
  auto forward = [&](std::vector<double>* lse, double* total) {
    std::vector<double> loss(none ? rows : 1), l(rows), tw(1);
    EXPECT_TRUE(CrossEntropyForward(View(x, xs), View(t, {rows}), wv, g,
                                    View(loss, {int64_t(loss.size())}),
                                    View(l, {rows}), View(tw, {}))
                    .ok());
    if (lse != nullptr) *lse = l, *total = tw[0];
    return loss;
  };
  std::vector<double> lse;
  double total = 0;
  const std::vector<double> loss = forward(&lse, &total);
  const std::vector<double> want =
      Reference(x, t, k.weighted ? &w : nullptr, k, ignore);
  ASSERT_EQ(loss.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(loss[i], want[i], 1e-12);
  auto r = Random(loss.size(), &rng);  // d(sum(loss * r))/dx
  std::vector<double> dx(x.size());
  std::vector<double> tw{total};
  ASSERT_TRUE(CrossEntropyBackward(View(r, {int64_t(r.size())}), View(x, xs),
                                   View(t, {rows}), wv, View(lse, {rows}),
                                   View(tw, {}), g, View(dx, xs))
                  .ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i], h = 1e-6;
    double up = 0, down = 0;
    x[i] = keep + h;
    std::vector<double> a = forward(nullptr, nullptr);
    x[i] = keep - h;
    std::vector<double> b = forward(nullptr, nullptr);
    x[i] = keep;
    for (size_t j = 0; j < a.size(); ++j)
      up += a[j] * r[j], down += b[j] * r[j];
    EXPECT_NEAR(dx[i], (up - down) / (2 * h), 1e-7) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Reductions, CrossEntropyTest,
    ::testing::Values(Case{5, 4, 1, LossReduction::kMean, 0, false},
                      Case{5, 4, 1, LossReduction::kSum, 0.2, true},
                      Case{5, 4, 1, LossReduction::kNone, 0.1, false},
                      Case{6, 11, 1, LossReduction::kMean, 0.3, true},
                      Case{2, 3, 4, LossReduction::kMean, 0.1, true},
                      Case{3, 5, 2, LossReduction::kNone, 0, false},
                      Case{5, 4, 1, LossReduction::kMean, 0, true, true},
                      Case{2, 3, 4, LossReduction::kNone, 0.1, false, true},
                      Case{3, 5, 2, LossReduction::kSum, 0, false, true}));

TEST(CrossEntropy, TargetOutOfRangeIsAnError) {
  std::vector<double> x(6), loss(1), lse(2), tw(1);
  std::vector<int64_t> t = {1, 3};
  const CrossEntropyGeometry g{2, 3, 1, -100, 0, LossReduction::kMean};
  const absl::Status s =
      CrossEntropyForward(View(x, {2, 3}), View(t, {2}), StridedView{nullptr},
                          g, View(loss, {}), View(lse, {2}), View(tw, {}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("target 3"), std::string::npos) << s;
}

// Float32 takes the AVX2 rows where the CPU has them (Note [CPU cross
// entropy]): rows with and without a tail past the 16- and 8-lane loops,
// with label smoothing and without.
struct Float32Case {
  int64_t n, c;
  double smoothing;
};

class CrossEntropyFloat32Test : public ::testing::TestWithParam<Float32Case> {};

TEST_P(CrossEntropyFloat32Test, MatchesFloat64) {
  const int64_t n = GetParam().n, c = GetParam().c;
  std::mt19937 rng(4);
  auto xd = Random(n * c, &rng, -8, 8);
  std::vector<float> xf(xd.begin(), xd.end());
  std::vector<int64_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = (i * 37) % c;
  const CrossEntropyGeometry g{
      n, c, 1, -100, GetParam().smoothing, LossReduction::kMean};
  std::vector<double> ld(1), lsed(n), twd(1), gd{1.0}, dxd(n * c);
  std::vector<float> lf(1), lsef(n), twf(1), gf{1.0f}, dxf(n * c);
  const StridedView none{nullptr};
  ASSERT_TRUE(CrossEntropyForward(View(xd, {n, c, 1}), View(t, {n}), none, g,
                                  View(ld, {}), View(lsed, {n}), View(twd, {}))
                  .ok());
  ASSERT_TRUE(CrossEntropyForward(View(xf, {n, c, 1}), View(t, {n}), none, g,
                                  View(lf, {}), View(lsef, {n}), View(twf, {}))
                  .ok());
  EXPECT_NEAR(lf[0], ld[0], 1e-5 * ld[0]);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(lsef[i], lsed[i], 1e-5 * (1 + std::abs(lsed[i]))) << i;
  }
  ASSERT_TRUE(CrossEntropyBackward(View(gd, {}), View(xd, {n, c, 1}),
                                   View(t, {n}), none, View(lsed, {n}),
                                   View(twd, {}), g, View(dxd, {n, c, 1}))
                  .ok());
  ASSERT_TRUE(CrossEntropyBackward(View(gf, {}), View(xf, {n, c, 1}),
                                   View(t, {n}), none, View(lsef, {n}),
                                   View(twf, {}), g, View(dxf, {n, c, 1}))
                  .ok());
  const double tol = 1e-6 / static_cast<double>(n);  // dx ~ 1/n
  for (int64_t i = 0; i < n * c; ++i) ASSERT_NEAR(dxf[i], dxd[i], tol) << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CrossEntropyFloat32Test,
                         ::testing::Values(Float32Case{256, 1000, 0.1},
                                           Float32Case{512, 512, 0.0},
                                           Float32Case{7, 37, 0.0},
                                           Float32Case{5, 5, 0.1}));

}  // namespace
}  // namespace cpu
}  // namespace tensord
