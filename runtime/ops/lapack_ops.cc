// LAPACK-backed linear algebra rows of the LU family, named and shaped as
// ATen's ops so the PyTorch device maps them one to one:
// linalg_lu_factor_ex, linalg_lu_solve, linalg_solve_triangular,
// _linalg_solve_ex, linalg_inv_ex, _linalg_slogdet and _linalg_det (the
// Cholesky, eigen and singular value rows: lapack_spectral_ops.cc; shared
// helpers: lapack_rows.h). Kernels in kernels/cpu/linalg.h; CPU only
// (KnownCpuOnly in known_cpu_only.cc), no native gradients: the PyTorch
// device differentiates them with PyTorch's own autograd on the client.
//
// Note [LU of the transpose]: for a contiguous A, ATen's det and slogdet
// factor A^T instead of A (its memory is A^T in LAPACK's column-major layout:
// no copy), and return that LU and those pivots; these rows do the same so
// every output matches, not only the determinant. (solve and inv factor A
// itself in PyTorch 2.15; 1.13's solve took A^T too.)
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/linalg.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/lapack_rows.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace lapack_rows {

// OK for a float tensor of two or more dims (square with `square`).
absl::Status RequireMatrices(const Tensor& t, const char* op, bool square) {
  if (!IsFloating(t.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected a floating point tensor (float32 or float64), got ",
        DTypeName(t.dtype())));
  }
  if (t.ndim() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the input must have at least 2 dimensions, got ",
                     ShapeToString(t.shape())));
  }
  if (square && t.shape()[t.ndim() - 1] != t.shape()[t.ndim() - 2]) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": A must be batches of square matrices, but they are ",
        t.shape()[t.ndim() - 2], " by ", t.shape()[t.ndim() - 1],
        " matrices (shape ", ShapeToString(t.shape()), ")"));
  }
  return absl::OkStatus();
}

Shape Batch(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}
Shape With(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}
int64_t Rows(const Tensor& t) { return t.shape()[t.ndim() - 2]; }
int64_t Cols(const Tensor& t) { return t.shape().back(); }

// INVALID_ARGUMENT naming the first failing matrix of `info` (int32), for
// the check_errors=True calls (`what` ends where the info value goes).
absl::Status CheckInfo(const Tensor& info, const std::string& what) {
  const int32_t* p = info.view().ptr<int32_t>();
  for (int64_t i = 0; i < info.numel(); ++i) {
    if (p[i] == 0) continue;
    std::string where =
        info.ndim() > 0 ? absl::StrCat("(Batch element ", i, "): ") : "";
    return absl::InvalidArgumentError(absl::StrCat(where, what, p[i], ")"));
  }
  return absl::OkStatus();
}

AttrSpec Flag(const char* name, bool value) {
  return Optional(name, AttrType::kBool, value);
}

// `t` broadcast to `shape` as a contiguous tensor (a copy unless it is one).
absl::StatusOr<Tensor> ExpandContiguous(const Tensor& t, const Shape& shape,
                                        const OpContext& ctx) {
  if (t.shape() == shape) return Contiguous(t, ctx);
  StridedView v = t.BroadcastView(shape);
  return Contiguous(
      t.AsStrided(shape, Strides(v.strides, v.strides + v.ndim), t.offset()),
      ctx);
}

// `t` (contiguous) seen with `shape` of the same element count.
Tensor Reshaped(const Tensor& t, const Shape& shape) {
  return t.AsStrided(shape, ContiguousStrides(shape), t.offset());
}

OpDef Row(const char* name, int inputs, int outputs,
          std::vector<AttrSpec> attrs, const char* doc, InferFn infer,
          KernelFn cpu, std::vector<OpExample> examples) {
  OpDef op = MakeOp(name, inputs, inputs, std::move(attrs), doc);
  op.num_outputs = outputs;
  op.infer = infer;
  op.cpu = cpu;
  op.differentiable = false;  // the PyTorch device runs PyTorch's autograd
  op.examples = std::move(examples);
  return op;
}

OpDef Differentiable(OpDef op) {
  op.differentiable = true;
  return op;
}

}  // namespace lapack_rows

namespace {

using namespace lapack_rows;  // NOLINT: defined above
using Specs = absl::StatusOr<std::vector<TensorSpec>>;

absl::StatusOr<Tensor> NewInt32(const Shape& shape, const Tensor& like,
                                const OpContext& ctx) {
  return Tensor::Empty(like.device(), DType::kInt32, shape, ctx.alloc);
}

// linalg_lu_factor_ex(A, pivot, check_errors) -> (LU, pivots, info).
Specs InferLuFactor(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.lu_factor", false));
  if (!attrs.Bool("pivot")) {
    return absl::InvalidArgumentError(
        "linalg.lu_factor: LU without pivoting is not implemented on the CPU "
        "(ATen's neither); call it with pivot=True");
  }
  const Shape batch = Batch(a);
  return std::vector<TensorSpec>{
      {a.dtype(), a.shape(), a.device()},
      {DType::kInt32, With(batch, {std::min(Rows(a), Cols(a))}), a.device()},
      {DType::kInt32, batch, a.device()}};
}

absl::Status CpuLuFactor(absl::Span<const Tensor> in,
                         absl::Span<const Tensor> out, const Attrs& attrs,
                         const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  TD_RETURN_IF_ERROR(cpu::LuFactor(a.view(), false, out[0].view(),
                                   out[1].view(), out[2].view()));
  if (!attrs.Bool("check_errors")) return absl::OkStatus();
  return CheckInfo(out[2],
                   "linalg.lu_factor: the factorization could not be completed "
                   "because the input is singular (a zero pivot at U[i, i], "
                   "i + 1 = ");
}

// The batch of a solve: LU's and B's batch dims broadcast.
absl::StatusOr<Shape> SolveBatch(const Tensor& lu, const Tensor& b) {
  const Shape lb = Batch(lu), bb = Batch(b);
  return BroadcastShapes(lb, bb);
}

absl::Status CheckSolveShapes(const Tensor& a, const Tensor& b, bool left,
                              const char* op) {
  TD_RETURN_IF_ERROR(RequireMatrices(a, op, true));
  if (b.dtype() != a.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": expected B to have the dtype of A (",
                     DTypeName(a.dtype()), "), got ", DTypeName(b.dtype())));
  }
  if (b.ndim() < 2 || (left ? Rows(b) : Cols(b)) != Rows(a)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": incompatible shapes of A and B for the equation ",
                     left ? "AX = B (" : "XA = B (", ShapeToString(a.shape()),
                     " and ", ShapeToString(b.shape()), ")"));
  }
  return absl::OkStatus();
}

// linalg_lu_solve(LU, pivots, B, left, adjoint) -> X.
Specs InferLuSolve(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const Tensor &lu = in[0], &piv = in[1], &b = in[2];
  TD_RETURN_IF_ERROR(
      CheckSolveShapes(lu, b, attrs.Bool("left"), "linalg.lu_solve"));
  if (piv.dtype() != DType::kInt32 ||
      piv.shape() != With(Batch(lu), {Rows(lu)})) {
    return absl::InvalidArgumentError(
        absl::StrCat("linalg.lu_solve: expected int32 pivots of shape ",
                     ShapeToString(With(Batch(lu), {Rows(lu)})),
                     " for LU of shape ", ShapeToString(lu.shape()), ", got ",
                     DTypeName(piv.dtype()), " ", ShapeToString(piv.shape())));
  }
  TD_ASSIGN_OR_RETURN(Shape batch, SolveBatch(lu, b));
  return std::vector<TensorSpec>{
      {b.dtype(), With(batch, {Rows(b), Cols(b)}), b.device()}};
}

// X into `x` (contiguous, batch + B's matrix shape) from LU and pivots of
// A's batch, broadcast against B's.
absl::Status SolveInto(const Tensor& lu, const Tensor& piv, const Tensor& b,
                       bool left, bool adjoint, const Tensor& x,
                       const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Shape batch, SolveBatch(lu, b));
  const int64_t n = Rows(lu);
  TD_ASSIGN_OR_RETURN(Tensor lu_e,
                      ExpandContiguous(lu, With(batch, {n, n}), ctx));
  TD_ASSIGN_OR_RETURN(Tensor piv_e,
                      ExpandContiguous(piv, With(batch, {n}), ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor b_e, ExpandContiguous(b, With(batch, {Rows(b), Cols(b)}), ctx));
  return cpu::LuSolve(lu_e.view(), piv_e.view(), b_e.view(), left, adjoint,
                      x.view());
}

absl::Status CpuLuSolve(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  return SolveInto(in[0], in[1], in[2], attrs.Bool("left"),
                   attrs.Bool("adjoint"), out[0], ctx);
}

// linalg_solve_triangular(A, B, upper, left, unitriangular) -> X.
Specs InferSolveTriangular(absl::Span<const Tensor> in, const Attrs& attrs,
                           const OpContext&) {
  const Tensor &a = in[0], &b = in[1];
  TD_RETURN_IF_ERROR(
      CheckSolveShapes(a, b, attrs.Bool("left"), "linalg.solve_triangular"));
  TD_ASSIGN_OR_RETURN(Shape batch, SolveBatch(a, b));
  return std::vector<TensorSpec>{
      {b.dtype(), With(batch, {Rows(b), Cols(b)}), b.device()}};
}

absl::Status CpuSolveTriangular(absl::Span<const Tensor> in,
                                absl::Span<const Tensor> out,
                                const Attrs& attrs, const OpContext& ctx) {
  const Tensor &a = in[0], &b = in[1];
  TD_ASSIGN_OR_RETURN(Shape batch, SolveBatch(a, b));
  const int64_t n = Rows(a);
  TD_ASSIGN_OR_RETURN(Tensor a_e,
                      ExpandContiguous(a, With(batch, {n, n}), ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor b_e, ExpandContiguous(b, With(batch, {Rows(b), Cols(b)}), ctx));
  return cpu::TriangularSolve(a_e.view(), b_e.view(), attrs.Bool("upper"),
                              attrs.Bool("left"), /*transpose=*/false,
                              attrs.Bool("unitriangular"), out[0].view());
}

// ATen's rule for a vector right-hand side: B of one dim, or A's shape
// less its last dim.
bool VectorRhs(const Tensor& a, const Tensor& b) {
  return b.ndim() == 1 ||
         (b.ndim() == a.ndim() - 1 &&
          std::equal(b.shape().begin(), b.shape().end(), a.shape().begin()));
}

// B as a matrix stack: a vector gets a last unit dim (ATen's, whichever
// side: a vector B with left=False is then refused, as ATen refuses it).
Tensor RhsMatrix(const Tensor& a, const Tensor& b) {
  if (!VectorRhs(a, b)) return b;
  Shape shape = b.shape();
  Strides strides = b.strides();
  shape.push_back(1);
  strides.push_back(1);
  return b.AsStrided(shape, strides, b.offset());
}

// _linalg_solve_ex(A, B, left, check_errors) -> (result, LU, pivots, info).
Specs InferSolveEx(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const Tensor& a = in[0];
  const bool left = attrs.Bool("left");
  const Tensor b = RhsMatrix(a, in[1]);
  TD_RETURN_IF_ERROR(CheckSolveShapes(a, b, left, "linalg.solve"));
  TD_ASSIGN_OR_RETURN(Shape batch, SolveBatch(a, b));
  Shape result = VectorRhs(a, in[1]) ? With(batch, {Rows(a)})
                                     : With(batch, {Rows(b), Cols(b)});
  const Shape ab = Batch(a);
  return std::vector<TensorSpec>{
      {a.dtype(), result, a.device()},
      {a.dtype(), a.shape(), a.device()},
      {DType::kInt32, With(ab, {Rows(a)}), a.device()},
      {DType::kInt32, ab, a.device()}};
}

absl::Status CpuSolveEx(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  const bool left = attrs.Bool("left");
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  TD_RETURN_IF_ERROR(cpu::LuFactor(a.view(), false, out[1].view(),
                                   out[2].view(), out[3].view()));
  const Tensor b = RhsMatrix(in[0], in[1]);
  TD_ASSIGN_OR_RETURN(Shape batch, SolveBatch(in[0], b));
  const Tensor x = Reshaped(out[0], With(batch, {Rows(b), Cols(b)}));
  TD_RETURN_IF_ERROR(SolveInto(out[1], out[2], b, left, false, x, ctx));
  if (!attrs.Bool("check_errors")) return absl::OkStatus();
  return CheckInfo(out[3],
                   "torch.linalg.solve: the solver failed because the input "
                   "matrix is singular (zero pivot ");
}

// linalg_inv_ex(A, check_errors) -> (inverse, info).
Specs InferInvEx(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.inv", true));
  return std::vector<TensorSpec>{{a.dtype(), a.shape(), a.device()},
                                 {DType::kInt32, Batch(a), a.device()}};
}

absl::Status CpuInvEx(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  TD_RETURN_IF_ERROR(cpu::Inverse(a.view(), out[0].view(), out[1].view()));
  if (!attrs.Bool("check_errors")) return absl::OkStatus();
  return CheckInfo(out[1],
                   "linalg.inv: the diagonal element of the LU factor is "
                   "zero, the inversion could not be completed because the "
                   "input matrix is singular (element ");
}

// _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots) and
// _linalg_det(A) -> (det, LU, pivots).
template <bool kLog>
Specs InferDet(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(
      RequireMatrices(a, kLog ? "linalg.slogdet" : "linalg.det", true));
  std::vector<TensorSpec> specs;
  for (int i = 0; i < (kLog ? 2 : 1); ++i) {
    specs.push_back({a.dtype(), Batch(a), a.device()});
  }
  specs.push_back({a.dtype(), a.shape(), a.device()});
  specs.push_back({DType::kInt32, With(Batch(a), {Rows(a)}), a.device()});
  return specs;
}

template <bool kLog>
absl::Status CpuDet(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                    const Attrs&, const OpContext& ctx) {
  const bool of_transpose =
      in[0].is_contiguous();  // Note [LU of the transpose]
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor info, NewInt32(Batch(a), a, ctx));
  const Tensor &lu = out[kLog ? 2 : 1], &piv = out[kLog ? 3 : 2];
  TD_RETURN_IF_ERROR(cpu::LuFactor(a.view(), of_transpose, lu.view(),
                                   piv.view(), info.view()));
  StridedView sign = out[0].view();
  return cpu::LuDeterminant(lu.view(), piv.view(), kLog, kLog ? &sign : nullptr,
                            out[kLog ? 1 : 0].view());
}

}  // namespace

std::vector<OpDef> LapackOps() {
  std::vector<OpDef> ops;
  ops.push_back(
      Row("linalg_lu_factor_ex", 1, 3,
          {Flag("pivot", true), Flag("check_errors", false)},
          "(LU, pivots, info): LU with partial pivoting of A [.., m, n] "
          "(LAPACK getrf); pivots int32, 1-based; info int32 per matrix.",
          InferLuFactor, CpuLuFactor,
          {Example({{3, 3}}), Example({{2, 3, 4}}), Example({{4, 2}})}));
  ops.push_back(
      Row("linalg_lu_solve", 3, 1, {Flag("left", true), Flag("adjoint", false)},
          "X with A X = B (left) or X A = B, A^H with adjoint, from "
          "linalg_lu_factor_ex's LU and pivots; batches broadcast. A pivot "
          "outside 1..n reads as no interchange.",
          InferLuSolve, CpuLuSolve,
          {Example({{3, 3}, {3}, {3, 2}}, {}, {DType::kFloat32, DType::kInt32}),
           Example({{2, 3, 3}, {2, 3}, {4, 3}}, {{"left", false}},
                   {DType::kFloat32, DType::kInt32})}));
  ops.push_back(Row(
      "linalg_solve_triangular", 2, 1,
      {Required("upper", AttrType::kBool), Flag("left", true),
       Flag("unitriangular", false)},
      "X with A X = B (left) or X A = B for A triangular (its upper or lower "
      "triangle read; unit diagonal with unitriangular); batches broadcast "
      "(BLAS trsm).",
      InferSolveTriangular, CpuSolveTriangular,
      {Example({{3, 3}, {3, 2}}, {{"upper", true}}),
       Example({{2, 3, 3}, {4, 3}},
               {{"upper", false}, {"left", false}, {"unitriangular", true}})}));
  ops.push_back(
      Row("_linalg_solve_ex", 2, 4,
          {Flag("left", true), Flag("check_errors", false)},
          "(result, LU, pivots, info) of solving A X = B (left) or X A = B; a "
          "vector B as ATen's.",
          InferSolveEx, CpuSolveEx,
          {Example({{3, 3}, {3, 2}}), Example({{2, 3, 3}, {3}}),
           Example({{3, 3}, {2, 3}}, {{"left", false}})}));
  ops.push_back(Row("linalg_inv_ex", 1, 2, {Flag("check_errors", false)},
                    "(inverse, info) of square A [.., n, n].", InferInvEx,
                    CpuInvEx, {Example({{3, 3}}), Example({{2, 4, 4}})}));
  ops.push_back(Row(
      "_linalg_slogdet", 1, 4, {}, "(sign, logabsdet, LU, pivots) of square A.",
      InferDet<true>, CpuDet<true>, {Example({{3, 3}}), Example({{2, 4, 4}})}));
  ops.push_back(Row("_linalg_det", 1, 3, {}, "(det, LU, pivots) of square A.",
                    InferDet<false>, CpuDet<false>,
                    {Example({{3, 3}}), Example({{2, 4, 4}})}));
  return ops;
}

}  // namespace tensord
