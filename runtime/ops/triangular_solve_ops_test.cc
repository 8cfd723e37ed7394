// The triangular_solve row (lapack_matrix_ops.cc) through the op table on
// the CPU: solves with A = [[2, 1], [0, 4]] worked out by hand in each of
// upper/lower, transpose and unitriangular, batches broadcast with A cloned
// over them, ATen's errors. The sweep against PyTorch (and the gradient) is
// tests/python/op_cases_linalg.py.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using V = std::vector<double>;

class TriangularSolveOpsTest : public CpuOpTest {
 protected:
  Tensor D(const V& v, Shape shape) { return From(v, DType::kFloat64, shape); }
  static void ExpectNear(const V& got, const V& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12) << "at " << i;
    }
  }
  // The solution of op(A) X = b for A = [[2, 1], [0, 4]] (its lower triangle
  // is diag(2, 4)), b = [4, 8]^T.
  V Solve(bool upper, bool transpose, bool unit) {
    auto out = Run(
        "triangular_solve", {D({4, 8}, {2, 1}), D(kA, {2, 2})},
        {{"upper", upper}, {"transpose", transpose}, {"unitriangular", unit}});
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    ExpectNear(Doubles((*out)[1]), kA);  // the coefficient, cloned whole
    return Doubles((*out)[0]);
  }
  const V kA = {2, 1, 0, 4};
};

TEST_F(TriangularSolveOpsTest, EachTriangleAndTranspose) {
  // Upper: x2 = 8 / 4, x1 = (4 - x2) / 2.
  ExpectNear(Solve(true, false, false), {1, 2});
  // Upper transposed, [[2, 0], [1, 4]]: x1 = 2, x2 = (8 - x1) / 4.
  ExpectNear(Solve(true, true, false), {2, 1.5});
  // Unit upper, [[1, 1], [0, 1]]: x2 = 8, x1 = 4 - 8.
  ExpectNear(Solve(true, false, true), {-4, 8});
  // Unit upper transposed, [[1, 0], [1, 1]]: x1 = 4, x2 = 8 - 4.
  ExpectNear(Solve(true, true, true), {4, 4});
  // Lower: diag(2, 4).
  ExpectNear(Solve(false, false, false), {2, 2});
  // Unit lower: the identity.
  ExpectNear(Solve(false, true, true), {4, 8});
}

TEST_F(TriangularSolveOpsTest, BatchesBroadcastAndCloneTheCoefficient) {
  // b [2, 2, 1] against one A: two solves (the second: x2 = 4 / 4, x1 =
  // (2 - x2) / 2), A cloned per batch.
  auto out =
      Run("triangular_solve", {D({4, 8, 2, 4}, {2, 2, 1}), D(kA, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 2, 1}));
  EXPECT_EQ((*out)[1].shape(), (Shape{2, 2, 2}));
  ExpectNear(Doubles((*out)[0]), {1, 2, 0.5, 1});
  ExpectNear(Doubles((*out)[1]), {2, 1, 0, 4, 2, 1, 0, 4});
  // One b against A [3, 1, 2, 2]: the batch is A's.
  auto wide = Run("triangular_solve",
                  {D({4, 8}, {2, 1}),
                   D({2, 1, 0, 4, 1, 0, 0, 1, 4, 9, 0, 2}, {3, 1, 2, 2})});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ((*wide)[0].shape(), (Shape{3, 1, 2, 1}));
  // [[4, 9], [0, 2]]: x2 = 4, x1 = (4 - 36) / 4.
  ExpectNear(Doubles((*wide)[0]), {1, 2, 4, 8, -8, 4});
}

TEST_F(TriangularSolveOpsTest, EmptyRightHandSides) {
  auto out = Run("triangular_solve", {D({}, {2, 0}), D(kA, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), (Shape{2, 0}));
  ExpectNear(Doubles((*out)[1]), kA);
}

TEST_F(TriangularSolveOpsTest, ErrorsNameTheShapes) {
  auto expect_error = [&](std::vector<Tensor> in, const std::string& text) {
    auto r = Run("triangular_solve", std::move(in));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status();
  };
  expect_error({D({1, 2}, {2}), D(kA, {2, 2})},
               "Expected b to have at least 2 dimensions");
  expect_error({D({1, 2, 3, 4, 5, 6}, {2, 3}), D({1, 2, 3, 4, 5, 6}, {2, 3})},
               "square matrices");
  expect_error({D({1, 2, 3}, {3, 1}), D(kA, {2, 2})},
               "each A matrix is 2 by 2 but each b matrix is 3 by 1");
  expect_error(
      {From(std::vector<float>{1, 2}, DType::kFloat32, {2, 1}), D(kA, {2, 2})},
      "same dtype");
  expect_error({D({1, 2, 3, 4}, {2, 2, 1}), D(V(12, 1.0), {3, 2, 2})},
               "");  // batches 2 and 3 do not broadcast
}

}  // namespace
}  // namespace tensord
