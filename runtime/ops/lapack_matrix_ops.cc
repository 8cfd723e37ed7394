// LAPACK-backed rows of the matrix exponential, the symmetric indefinite
// (LDL^T) factorization and the legacy triangular solve, named and shaped as
// ATen's ops: linalg_matrix_exp, linalg_ldl_factor_ex, linalg_ldl_solve,
// triangular_solve (shared conventions: lapack_ops.cc, lapack_rows.h).
// Kernels in kernels/cpu/matrix_exp.h, kernels/cpu/ldl.h and
// kernels/cpu/linalg.h; CPU only (KnownCpuOnly in known_cpu_only.cc).
// matrix_exp has a native gradient (this row again, on a 2n x 2n block
// matrix) and so has triangular_solve (derivatives_linalg.cc); the LDL rows
// none, as PyTorch's. The PyTorch device runs PyTorch's autograd on the
// client instead.
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/ldl.h"
#include "kernels/cpu/linalg.h"
#include "kernels/cpu/matrix_exp.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/lapack_rows.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using namespace lapack_rows;  // NOLINT: the rows' shared helpers
using Specs = absl::StatusOr<std::vector<TensorSpec>>;

// linalg_matrix_exp(self) -> exp(self).
Specs InferMatrixExp(absl::Span<const Tensor> in, const Attrs&,
                     const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.matrix_exp", true));
  return std::vector<TensorSpec>{{a.dtype(), a.shape(), a.device()}};
}

absl::Status CpuMatrixExp(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs&,
                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  return cpu::MatrixExp(a.view(), out[0].view());
}

// linalg_ldl_factor_ex(self, hermitian, check_errors) -> (LD, pivots, info).
// `hermitian` is the same factorization for real inputs.
Specs InferLdlFactor(absl::Span<const Tensor> in, const Attrs&,
                     const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "torch.linalg.ldl_factor_ex", true));
  return std::vector<TensorSpec>{
      {a.dtype(), a.shape(), a.device()},
      {DType::kInt32, With(Batch(a), {Rows(a)}), a.device()},
      {DType::kInt32, Batch(a), a.device()}};
}

absl::Status CpuLdlFactor(absl::Span<const Tensor> in,
                          absl::Span<const Tensor> out, const Attrs& attrs,
                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  TD_RETURN_IF_ERROR(
      cpu::LdlFactor(a.view(), out[0].view(), out[1].view(), out[2].view()));
  if (!attrs.Bool("check_errors")) return absl::OkStatus();
  return CheckInfo(out[2],
                   "torch.linalg.ldl_factor_ex: the factorization could not "
                   "be completed because the input is singular (D is zero at "
                   "position ");
}

// linalg_ldl_solve(LD, pivots, B, hermitian) -> X; LD's and B's batches
// broadcast.
Specs InferLdlSolve(absl::Span<const Tensor> in, const Attrs&,
                    const OpContext&) {
  const Tensor &ld = in[0], &piv = in[1], &b = in[2];
  const char* op = "torch.linalg.ldl_solve";
  TD_RETURN_IF_ERROR(RequireMatrices(ld, op, true));
  if (piv.dtype() != DType::kInt32 ||
      piv.shape() != With(Batch(ld), {Rows(ld)})) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": expected int32 pivots of shape ",
                     ShapeToString(With(Batch(ld), {Rows(ld)})),
                     " for LD of shape ", ShapeToString(ld.shape()), ", got ",
                     DTypeName(piv.dtype()), " ", ShapeToString(piv.shape())));
  }
  if (b.dtype() != ld.dtype() || b.ndim() < 2 || Rows(b) != Rows(ld)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": expected B of LD's dtype (", DTypeName(ld.dtype()),
                     ") and shape [..., ", Rows(ld), ", k], got ",
                     DTypeName(b.dtype()), " ", ShapeToString(b.shape())));
  }
  TD_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(Batch(ld), Batch(b)));
  return std::vector<TensorSpec>{
      {b.dtype(), With(batch, {Rows(b), Cols(b)}), b.device()}};
}

absl::Status CpuLdlSolve(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs&,
                         const OpContext& ctx) {
  const Tensor &ld = in[0], &piv = in[1], &b = in[2];
  TD_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(Batch(ld), Batch(b)));
  const int64_t n = Rows(ld);
  TD_ASSIGN_OR_RETURN(Tensor ld_e,
                      ExpandContiguous(ld, With(batch, {n, n}), ctx));
  TD_ASSIGN_OR_RETURN(Tensor piv_e,
                      ExpandContiguous(piv, With(batch, {n}), ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor b_e, ExpandContiguous(b, With(batch, {Rows(b), Cols(b)}), ctx));
  return cpu::LdlSolve(ld_e.view(), piv_e.view(), b_e.view(), out[0].view());
}

// triangular_solve(self = B, A, upper, transpose, unitriangular) ->
// (solution, cloned_coefficient): X with op(A) X = B, op(A) = A^T with
// transpose, and A itself, both over the broadcast batch (ATen's checks and
// words).
Specs InferTriangularSolve(absl::Span<const Tensor> in, const Attrs&,
                           const OpContext&) {
  const Tensor &b = in[0], &a = in[1];
  const char* op = "torch.triangular_solve";
  for (const auto& [t, name] : {std::pair{&b, "b"}, std::pair{&a, "A"}}) {
    if (t->ndim() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": Expected ", name,
                       " to have at least 2 dimensions, but it has ", t->ndim(),
                       " dimensions instead"));
    }
  }
  TD_RETURN_IF_ERROR(RequireMatrices(a, op, true));
  if (b.dtype() != a.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": Expected b and A to have the same dtype, but found b of type ",
        DTypeName(b.dtype()), " and A of type ", DTypeName(a.dtype()),
        " instead."));
  }
  if (Rows(b) != Rows(a)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Incompatible matrix sizes for triangular_solve: each A matrix is ",
        Rows(a), " by ", Cols(a), " but each b matrix is ", Rows(b), " by ",
        Cols(b)));
  }
  TD_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(Batch(b), Batch(a)));
  return std::vector<TensorSpec>{
      {b.dtype(), With(batch, {Rows(b), Cols(b)}), b.device()},
      {a.dtype(), With(batch, {Rows(a), Cols(a)}), a.device()}};
}

// A broadcast into cloned_coefficient (contiguous), which trsm then reads.
absl::Status CpuTriangularSolve(absl::Span<const Tensor> in,
                                absl::Span<const Tensor> out,
                                const Attrs& attrs, const OpContext& ctx) {
  const Tensor &b = in[0], &a = in[1], &x = out[0], &a_copy = out[1];
  TD_RETURN_IF_ERROR(cpu::Copy(a.BroadcastView(a_copy.shape()), a_copy.view()));
  TD_ASSIGN_OR_RETURN(Tensor b_e, ExpandContiguous(b, x.shape(), ctx));
  return cpu::TriangularSolve(a_copy.view(), b_e.view(), attrs.Bool("upper"),
                              /*left=*/true, attrs.Bool("transpose"),
                              attrs.Bool("unitriangular"), x.view());
}

}  // namespace

std::vector<OpDef> LapackMatrixOps() {
  std::vector<OpDef> ops;
  ops.push_back(Differentiable(Row(
      "linalg_matrix_exp", 1, 1, {},
      "exp(A) = sum_k A^k / k! of square A [.., n, n] (scaling and squaring, "
      "Pade 13, in float64).",
      InferMatrixExp, CpuMatrixExp,
      {Example({{3, 3}}), Example({{2, 4, 4}})})));
  ops.push_back(Row(
      "linalg_ldl_factor_ex", 1, 3,
      {Flag("hermitian", false), Flag("check_errors", false)},
      "(LD, pivots, info): A = L D L^T with Bunch-Kaufman pivoting from A's "
      "lower triangle (LAPACK sytrf): L and D in LD's lower triangle, the "
      "upper zero; pivots int32 as LAPACK's; info k > 0: D[k, k] is zero.",
      InferLdlFactor, CpuLdlFactor,
      {Example({{3, 3}}), Example({{2, 4, 4}}, {{"check_errors", true}})}));
  ops.push_back(Row(
      "linalg_ldl_solve", 3, 1, {Flag("hermitian", false)},
      "X with A X = B from linalg_ldl_factor_ex's LD and pivots (LAPACK "
      "sytrs); batches broadcast. Pivots LAPACK could not follow read as 1 x "
      "1 blocks without interchange.",
      InferLdlSolve, CpuLdlSolve,
      {Example({{3, 3}, {3}, {3, 2}}, {}, {DType::kFloat32, DType::kInt32}),
       Example({{2, 3, 3}, {2, 3}, {4, 2, 3, 1}}, {},
               {DType::kFloat32, DType::kInt32})}));
  ops.push_back(Differentiable(Row(
      "triangular_solve", 2, 2,
      {Flag("upper", true), Flag("transpose", false),
       Flag("unitriangular", false)},
      "(solution, cloned_coefficient): X with op(A) X = B for B = input "
      "[.., n, k] and triangular A [.., n, n] (its upper or lower triangle "
      "read; a unit diagonal with unitriangular), op(A) = A^T with "
      "transpose; batches broadcast and cloned_coefficient is A over the "
      "common batch (BLAS trsm). PyTorch's legacy torch.triangular_solve.",
      InferTriangularSolve, CpuTriangularSolve,
      {Example({{3, 2}, {3, 3}}),
       Example({{2, 3, 1}, {3, 3}}, {{"upper", false}, {"transpose", true}}),
       Example({{4, 2}, {2, 1, 4, 4}}, {{"unitriangular", true}})})));
  return ops;
}

}  // namespace tensord
