// The igamma, igammac and frexp rows (special_ops.cc, unary_ops.cc) through
// the op table on the CPU: igamma's dtype promotion, broadcasting and closed
// forms (P(1, x) = 1 - e^-x, P(1/2, x) = erf(sqrt(x))); frexp's two outputs
// and its floating-only check. Kernel values in every regime:
// kernels/cpu/igamma_test.cc; the sweep against PyTorch (and the
// gradients): tests/python/op_cases_math.py.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using V = std::vector<double>;

class SpecialRowsTest : public CpuOpTest {
 protected:
  Tensor D(const V& v, Shape shape) { return From(v, DType::kFloat64, shape); }
  static void ExpectNear(const V& got, const V& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
    }
  }
};

TEST_F(SpecialRowsTest, IgammaPromotesAndComputes) {
  // An integer a with a float32 x computes in float32: P(1, x) = 1 - e^-x,
  // Q(1, x) = e^-x; integers alone are refused, as PyTorch refuses them.
  const Tensor a = From(std::vector<int64_t>{1, 1}, DType::kInt64, {2});
  const Tensor x = From(std::vector<float>{2, 0}, DType::kFloat32, {2});
  EXPECT_FALSE(Run("igamma", {a, a}).ok());
  const Tensor p = Run1("igamma", {a, x});
  EXPECT_EQ(p.dtype(), DType::kFloat32);
  const V pv = Doubles(p), qv = Doubles(Run1("igammac", {a, x}));
  EXPECT_NEAR(pv[0], 1 - std::exp(-2.0), 1e-7);
  EXPECT_EQ(pv[1], 0);
  EXPECT_NEAR(qv[0], std::exp(-2.0), 1e-7);
  EXPECT_EQ(qv[1], 1);
  // float64 a against a 0-d x broadcasts: P(1/2, 1) = erf(1).
  const V half = Doubles(Run1("igamma", {D({0.5, 1}, {2}), D({1}, {})}));
  EXPECT_NEAR(half[0], std::erf(1.0), 1e-15);
  EXPECT_NEAR(half[1], 1 - std::exp(-1.0), 1e-15);
}

TEST_F(SpecialRowsTest, FrexpGivesMantissaAndInt32Exponent) {
  auto out = Run("frexp",
                 {From(std::vector<float>{6, -0.25, 0}, DType::kFloat32, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kFloat32);
  ASSERT_EQ((*out)[1].dtype(), DType::kInt32);
  ExpectNear(Doubles((*out)[0]), {0.75, -0.5, 0});
  const int32_t* e = (*out)[1].view().ptr<const int32_t>();
  EXPECT_EQ(std::vector<int32_t>(e, e + 3), (std::vector<int32_t>{3, -1, 0}));
  auto ints = Run("frexp", {From(std::vector<int64_t>{1}, DType::kInt64, {1})});
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().message().find("floating-point"), std::string::npos);
}

}  // namespace
}  // namespace tensord
