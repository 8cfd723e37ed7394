// The QR-family, least squares, matrix_exp and LDL rows (lapack_qr_ops.cc,
// lapack_matrix_ops.cc) on small matrices whose factors are worked out by
// hand: the Householder QR of [[3, 0], [4, 5]] (one reflection H = I -
// 2uu^T, u = (2, 1)/sqrt(5), mapping (3, 4) to (-5, 0)), the least squares
// fit of three equations in two unknowns through the normal equations,
// exponentials with closed forms (nilpotent, rotation generators before and
// after scaling, diagonal), and LDL^T with a 1 x 1 and a 2 x 2 pivot. The
// sweep against PyTorch is tests/python/op_cases_qr.py and
// tests/python_torch/test_linalg_qr.py.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

class LapackQrOpsTest : public CpuOpTest {
 protected:
  Tensor D(const std::vector<double>& v, Shape shape) {
    return From(v, DType::kFloat64, shape);
  }
  static void ExpectNear(const std::vector<double>& got,
                         const std::vector<double>& want, double tol = 1e-12) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i])))
          << "at " << i;
    }
  }
  static std::vector<int32_t> Ints32(const Tensor& t) {
    const int32_t* p = t.view().ptr<const int32_t>();
    return std::vector<int32_t>(p, p + t.numel());
  }
  // [[3, 0], [4, 5]] = Q R.
  const std::vector<double> kA = {3, 0, 4, 5};
  const std::vector<double> kQ = {-0.6, -0.8, -0.8, 0.6};
  const std::vector<double> kR = {-5, -4, 0, 3};
};

TEST_F(LapackQrOpsTest, QrOfEveryMode) {
  for (std::string mode : {"reduced", "complete", "r"}) {
    auto out = Run("linalg_qr", {D(kA, {2, 2})}, {{"mode", mode}});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear(Doubles((*out)[1]), kR);
    if (mode == "r") {
      EXPECT_EQ((*out)[0].shape(), Shape{0});
    } else {
      ExpectNear(Doubles((*out)[0]), kQ);
    }
  }
  // A tall batch of the same matrix under a zero row: Q gains a row (and a
  // column, with 'complete'); R a zero row when complete.
  const Tensor tall = D({3, 0, 4, 5, 0, 0, 3, 0, 4, 5, 0, 0}, {2, 3, 2});
  auto reduced = Run("linalg_qr", {tall});
  ASSERT_TRUE(reduced.ok()) << reduced.status();
  EXPECT_EQ((*reduced)[0].shape(), (Shape{2, 3, 2}));
  ExpectNear(Doubles((*reduced)[1]), {-5, -4, 0, 3, -5, -4, 0, 3});
  auto complete = Run("linalg_qr", {tall}, {{"mode", std::string("complete")}});
  ASSERT_TRUE(complete.ok()) << complete.status();
  EXPECT_EQ((*complete)[0].shape(), (Shape{2, 3, 3}));
  EXPECT_EQ((*complete)[1].shape(), (Shape{2, 3, 2}));
  const std::vector<double> q = Doubles((*complete)[0]);
  EXPECT_NEAR(std::abs(q[8]), 1.0, 1e-12);  // Q[2, 2]: the zero row's axis
  EXPECT_FALSE(Run("linalg_qr", {tall}, {{"mode", std::string("full")}}).ok());
}

TEST_F(LapackQrOpsTest, GeqrfHouseholderProductAndOrmqr) {
  auto qr = Run("geqrf", {D(kA, {2, 2})});
  ASSERT_TRUE(qr.ok()) << qr.status();
  // v = u / u_0 = (1, 0.5) below the diagonal, tau = 2 / |v|^2; the last
  // column's reflector is the identity (tau 0).
  ExpectNear(Doubles((*qr)[0]), {-5, -4, 0.5, 3});
  ExpectNear(Doubles((*qr)[1]), {1.6, 0});
  const Tensor h = (*qr)[0], tau = (*qr)[1];
  ExpectNear(Doubles(Run1("linalg_householder_product", {h, tau})), kQ);
  const Tensor c = D({1, 2, 0, 1}, {2, 2});
  // Q C, Q^T C (Q is symmetric here: the same) and C Q.
  ExpectNear(Doubles(Run1("ormqr", {h, tau, c})), {-0.6, -2, -0.8, -1});
  ExpectNear(Doubles(Run1("ormqr", {h, tau, c}, {{"transpose", true}})),
             {-0.6, -2, -0.8, -1});
  ExpectNear(Doubles(Run1("ormqr", {h, tau, c}, {{"left", false}})),
             {-2.2, 0.4, -0.8, 0.6});
  // ATen's shape rules: other's rows must be input's rows (left).
  EXPECT_EQ(Run("ormqr", {h, tau, D({1, 2, 3}, {3, 1})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // householder_product needs m >= n.
  EXPECT_FALSE(
      Run("linalg_householder_product", {D({1, 2}, {1, 2}), D({1}, {1})}).ok());
}

TEST_F(LapackQrOpsTest, LstsqEveryDriver) {
  // x minimizing |A x - b| for A = [[1, 0], [0, 1], [1, 1]], b = (1, 2, 4):
  // A^T A x = A^T b gives x = (4/3, 7/3), residual (-1, -1, 1)/3 whose
  // squared norm is 1/3; A's singular values are sqrt(3) and 1.
  const Tensor a = D({1, 0, 0, 1, 1, 1}, {3, 2});
  const Tensor b = D({1, 2, 4}, {3, 1});
  for (std::string driver : {"gels", "gelsy", "gelsd", "gelss"}) {
    auto out = Run("linalg_lstsq", {a, b}, {{"driver", driver}});
    ASSERT_TRUE(out.ok()) << driver << ": " << out.status();
    ExpectNear(Doubles((*out)[0]), {4.0 / 3, 7.0 / 3});
    if (driver == "gelsy") {
      EXPECT_EQ((*out)[1].numel(), 0) << "gelsy gives no residuals";
    } else {
      ExpectNear(Doubles((*out)[1]), {1.0 / 3});
    }
    if (driver == "gels") {
      EXPECT_EQ((*out)[2].numel(), 0) << "gels gives no rank";
    } else {
      EXPECT_EQ(Ints64((*out)[2]), std::vector<int64_t>{2}) << driver;
    }
    if (driver == "gelsd" || driver == "gelss") {
      ExpectNear(Doubles((*out)[3]), {std::sqrt(3.0), 1});
    } else {
      EXPECT_EQ((*out)[3].numel(), 0);
    }
  }
  // A vector b: the solution drops the unit dim, residuals keep it.
  auto vec = Run("linalg_lstsq", {a, D({1, 2, 4}, {3})},
                 {{"driver", std::string("gelsd")}});
  ASSERT_TRUE(vec.ok()) << vec.status();
  EXPECT_EQ((*vec)[0].shape(), Shape{2});
  EXPECT_EQ((*vec)[1].shape(), Shape{1});
  // Rank deficiency: gelsd finds rank 1, the minimum norm solution of
  // x0 + x1 = 2 (b's mean on the repeated rows) is (1, 1).
  auto low = Run("linalg_lstsq",
                 {D({1, 1, 1, 1, 0, 0}, {3, 2}), D({1, 3, 0}, {3, 1})},
                 {{"driver", std::string("gelsd")}});
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_EQ(Ints64((*low)[2]), std::vector<int64_t>{1});
  ExpectNear(Doubles((*low)[0]), {1, 1});
  EXPECT_FALSE(Run("linalg_lstsq", {a, b}, {{"driver", std::string("gelsx")}})
                   .ok());
  EXPECT_FALSE(Run("linalg_lstsq", {a, D({1, 2}, {2, 1})}).ok());
}

TEST_F(LapackQrOpsTest, MatrixExpClosedForms) {
  ExpectNear(Doubles(Run1("linalg_matrix_exp", {D({0, 1, 0, 0}, {2, 2})})),
             {1, 1, 0, 1});
  // exp([[0, -t], [t, 0]]) rotates by t: t = 0.5 without scaling, t = 20
  // (1-norm over theta_13) with two squarings.
  for (double t : {0.5, 20.0}) {
    ExpectNear(
        Doubles(Run1("linalg_matrix_exp", {D({0, -t, t, 0}, {1, 2, 2})})),
        {std::cos(t), -std::sin(t), std::sin(t), std::cos(t)}, 1e-12);
  }
  ExpectNear(Doubles(Run1("linalg_matrix_exp", {D({1, 0, 0, -10}, {2, 2})})),
             {std::exp(1.0), 0, 0, std::exp(-10.0)});
  const Tensor f32 = From(std::vector<float>{0, 1, 0, 0}, DType::kFloat32,
                          {2, 2});
  ExpectNear(Doubles(Run1("linalg_matrix_exp", {f32})), {1, 1, 0, 1});
  EXPECT_FALSE(Run("linalg_matrix_exp", {D({1, 2}, {1, 2})}).ok());
}

TEST_F(LapackQrOpsTest, LdlFactorAndSolve) {
  // [[4, 2], [2, 3]]: a 1 x 1 pivot, L = [[1, 0], [0.5, 1]], D = (4, 2).
  auto f = Run("linalg_ldl_factor_ex", {D({4, 2, 2, 3}, {2, 2})});
  ASSERT_TRUE(f.ok()) << f.status();
  ExpectNear(Doubles((*f)[0]), {4, 0, 0.5, 2});
  EXPECT_EQ(Ints32((*f)[1]), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(Ints32((*f)[2]), std::vector<int32_t>{0});
  // A^-1 (2, 1) = (3 * 2 - 2 * 1, -2 * 2 + 4 * 1) / 8.
  ExpectNear(Doubles(Run1("linalg_ldl_solve",
                          {(*f)[0], (*f)[1], D({2, 1}, {2, 1})})),
             {0.5, 0});
  // [[0, 1], [1, 0]]: a 2 x 2 pivot (both pivots -2), D its own lower
  // triangle.
  auto g = Run("linalg_ldl_factor_ex", {D({0, 1, 1, 0}, {2, 2})});
  ASSERT_TRUE(g.ok()) << g.status();
  ExpectNear(Doubles((*g)[0]), {0, 0, 1, 0});
  EXPECT_EQ(Ints32((*g)[1]), (std::vector<int32_t>{-2, -2}));
  ExpectNear(Doubles(Run1("linalg_ldl_solve",
                          {(*g)[0], (*g)[1], D({1, 2, 3, 4}, {2, 2, 1})})),
             {2, 1, 4, 3});
  // Pivots are data: out-of-range ones read as no interchange.
  const Tensor bad = From(std::vector<int32_t>{7, -9}, DType::kInt32, {2});
  ExpectNear(
      Doubles(Run1("linalg_ldl_solve", {(*f)[0], bad, D({2, 1}, {2, 1})})),
      {0.5, 0});
  // A singular D: info names the zero pivot; check_errors makes it an error.
  auto z = Run("linalg_ldl_factor_ex", {D({0, 0, 0, 0}, {2, 2})});
  ASSERT_TRUE(z.ok()) << z.status();
  EXPECT_EQ(Ints32((*z)[2]), std::vector<int32_t>{1});
  EXPECT_EQ(Run("linalg_ldl_factor_ex", {D({0, 0, 0, 0}, {2, 2})},
                {{"check_errors", true}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensord
