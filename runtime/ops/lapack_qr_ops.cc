// LAPACK-backed rows of the QR family and least squares, named and shaped
// as ATen's ops so the PyTorch device maps them one to one: geqrf,
// linalg_qr, ormqr, linalg_householder_product and linalg_lstsq (shared
// conventions: lapack_ops.cc, lapack_rows.h). Kernels in
// kernels/cpu/linalg_qr.h; CPU only (KnownCpuOnly in known_cpu_only.cc:
// tensord has no cuSOLVER path yet). linalg_qr, linalg_householder_product,
// ormqr and linalg_lstsq (full-rank A) have native gradients
// (derivatives_linalg.cc); geqrf none (PyTorch's neither); the PyTorch
// device differentiates them with PyTorch's own autograd on the client.
#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/linalg_qr.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/lapack_rows.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using namespace lapack_rows;  // NOLINT: the rows' shared helpers
using Specs = absl::StatusOr<std::vector<TensorSpec>>;

absl::Status SameDType(const Tensor& a, const Tensor& b, const char* op,
                       const char* what) {
  if (a.dtype() == b.dtype()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": expected ", what, " to have the dtype of the input (",
                   DTypeName(a.dtype()), "), got ", DTypeName(b.dtype())));
}

// geqrf(self) -> (a, tau).
Specs InferGeqrf(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "torch.geqrf", false));
  return std::vector<TensorSpec>{
      {a.dtype(), a.shape(), a.device()},
      {a.dtype(), With(Batch(a), {std::min(Rows(a), Cols(a))}), a.device()}};
}

absl::Status CpuGeqrf(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  return cpu::Geqrf(a.view(), out[0].view(), out[1].view());
}

absl::StatusOr<cpu::QrMode> Mode(const Attrs& attrs) {
  const std::string& mode = attrs.String("mode");
  if (mode == "reduced") return cpu::QrMode::kReduced;
  if (mode == "complete") return cpu::QrMode::kComplete;
  if (mode == "r") return cpu::QrMode::kR;
  return absl::InvalidArgumentError(
      absl::StrCat("qr received unrecognized mode '", mode,
                   "' but expected one of 'reduced' (default), 'r', or "
                   "'complete'"));
}

// linalg_qr(A, mode) -> (Q, R); with mode 'r' Q is empty ([0]), as ATen's.
Specs InferQr(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext&) {
  const Tensor& a = in[0];
  TD_RETURN_IF_ERROR(RequireMatrices(a, "linalg.qr", false));
  TD_ASSIGN_OR_RETURN(cpu::QrMode mode, Mode(attrs));
  const int64_t m = Rows(a), n = Cols(a), k = std::min(m, n);
  const bool complete = mode == cpu::QrMode::kComplete;
  const Shape q = mode == cpu::QrMode::kR
                      ? Shape{0}
                      : With(Batch(a), {m, complete ? m : k});
  return std::vector<TensorSpec>{
      {a.dtype(), q, a.device()},
      {a.dtype(), With(Batch(a), {complete ? m : k, n}), a.device()}};
}

absl::Status CpuQr(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                   const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(cpu::QrMode mode, Mode(attrs));
  TD_ASSIGN_OR_RETURN(Tensor a, Contiguous(in[0], ctx));
  return cpu::Qr(a.view(), mode, out[0].view(), out[1].view());
}

// The reflectors' shapes ATen's householder_product and ormqr require: tau
// [.., k] with input's batch and k <= input's columns.
absl::Status CheckReflectors(const Tensor& h, const Tensor& tau,
                             const char* op) {
  TD_RETURN_IF_ERROR(RequireMatrices(h, op, false));
  TD_RETURN_IF_ERROR(SameDType(h, tau, op, "tau"));
  if (tau.ndim() != h.ndim() - 1 ||
      !std::equal(tau.shape().begin(), tau.shape().end() - 1,
                  h.shape().begin())) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected tau.shape[:-1] to equal input.shape[:-2] (input ",
        ShapeToString(h.shape()), ", tau ", ShapeToString(tau.shape()), ")"));
  }
  if (tau.shape().back() > Cols(h)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": input.shape[-1] must be greater than or equal to "
        "tau.shape[-1] (input ",
        ShapeToString(h.shape()), ", tau ", ShapeToString(tau.shape()), ")"));
  }
  return absl::OkStatus();
}

// linalg_householder_product(input, tau) -> Q [.., m, n].
Specs InferHouseholder(absl::Span<const Tensor> in, const Attrs&,
                       const OpContext&) {
  const Tensor &h = in[0], &tau = in[1];
  const char* op = "torch.linalg.householder_product";
  TD_RETURN_IF_ERROR(CheckReflectors(h, tau, op));
  if (Rows(h) < Cols(h)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op,
                     ": input.shape[-2] must be greater than or equal to "
                     "input.shape[-1] (input ",
                     ShapeToString(h.shape()), ")"));
  }
  return std::vector<TensorSpec>{{h.dtype(), h.shape(), h.device()}};
}

absl::Status CpuHouseholder(absl::Span<const Tensor> in,
                            absl::Span<const Tensor> out, const Attrs&,
                            const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::HouseholderProduct(c[0].view(), c[1].view(), out[0].view());
}

// ormqr(input, tau, other, left, transpose) -> op(Q) other or other op(Q).
Specs InferOrmqr(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor &h = in[0], &tau = in[1], &c = in[2];
  const char* op = "torch.ormqr";
  TD_RETURN_IF_ERROR(CheckReflectors(h, tau, op));
  TD_RETURN_IF_ERROR(SameDType(h, c, op, "other"));
  const bool left = attrs.Bool("left");
  if (c.ndim() != h.ndim() ||
      !std::equal(c.shape().begin(), c.shape().end() - 2, h.shape().begin()) ||
      (left ? Rows(c) : Cols(c)) != Rows(h) || tau.shape().back() > Rows(h)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": expected other of shape [..., ", left ? "" : "m, ", Rows(h),
        left ? ", n]" : "]", " with input's batch and tau.shape[-1] <= ",
        "input.shape[-2] (input ", ShapeToString(h.shape()), ", tau ",
        ShapeToString(tau.shape()), ", other ", ShapeToString(c.shape()),
        ", left=", left ? "True" : "False", ")"));
  }
  return std::vector<TensorSpec>{{c.dtype(), c.shape(), c.device()}};
}

absl::Status CpuOrmqr(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::Ormqr(c[0].view(), c[1].view(), c[2].view(), attrs.Bool("left"),
                    attrs.Bool("transpose"), out[0].view());
}

absl::StatusOr<cpu::LstsqDriver> Driver(const Attrs& attrs) {
  if (!attrs.Has("driver")) return cpu::LstsqDriver::kGelsy;  // the CPU's
  const std::string& d = attrs.String("driver");
  if (d == "gels") return cpu::LstsqDriver::kGels;
  if (d == "gelsy") return cpu::LstsqDriver::kGelsy;
  if (d == "gelsd") return cpu::LstsqDriver::kGelsd;
  if (d == "gelss") return cpu::LstsqDriver::kGelss;
  return absl::InvalidArgumentError(absl::StrCat(
      "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
      "gelsd, gelss), got '",
      d, "'"));
}

// The shapes of a least squares call: B as a matrix stack (a vector B,
// one dim less than A, gets a unit last dim) and the broadcast batch.
struct LstsqShapes {
  Shape batch;
  int64_t m, n, k;
  bool vector;
};

absl::StatusOr<LstsqShapes> CheckLstsq(const Tensor& a, const Tensor& b) {
  const char* op = "torch.linalg.lstsq";
  TD_RETURN_IF_ERROR(RequireMatrices(a, op, false));
  TD_RETURN_IF_ERROR(SameDType(a, b, op, "b"));
  const int64_t diff = a.ndim() - b.ndim();
  if (diff < 0 || diff > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": input.dim() must be greater or equal to other.dim() and "
        "(input.dim() - other.dim()) <= 1 (input ",
        ShapeToString(a.shape()), ", other ", ShapeToString(b.shape()), ")"));
  }
  const bool vector = diff == 1;
  const int64_t b_rows = vector ? b.shape().back() : Rows(b);
  if (b_rows != Rows(a)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": input.size(-2) should match other.size(", vector ? "-1" : "-2",
        ") (input ", ShapeToString(a.shape()), ", other ",
        ShapeToString(b.shape()), ")"));
  }
  const Shape b_batch(b.shape().begin(), b.shape().end() - (vector ? 1 : 2));
  TD_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(Batch(a), b_batch));
  return LstsqShapes{batch, Rows(a), Cols(a), vector ? 1 : Cols(b), vector};
}

// linalg_lstsq(A, B, rcond, driver) -> (solution, residuals, rank,
// singular_values), shaped as ATen's on the CPU: residuals [.., k] when m >
// n and the driver is not gelsy (ATen's also drops them, to [0], when
// gelsd/gelss find some matrix of rank < n: it reads the rank back to
// decide, and so does the PyTorch device's rule), rank unless gels,
// singular values for gelsd and gelss; the other outputs empty ([0]). The
// solution and residuals have the broadcast batch, rank and singular
// values A's own (A has at least B's dims, so both batches have one rank).
Specs InferLstsq(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor &a = in[0], &b = in[1];
  TD_ASSIGN_OR_RETURN(LstsqShapes s, CheckLstsq(a, b));
  TD_ASSIGN_OR_RETURN(cpu::LstsqDriver d, Driver(attrs));
  using D = cpu::LstsqDriver;
  const bool residuals = s.m > s.n && d != D::kGelsy;
  const bool svd = d == D::kGelsd || d == D::kGelss;
  return std::vector<TensorSpec>{
      {a.dtype(), s.vector ? With(s.batch, {s.n}) : With(s.batch, {s.n, s.k}),
       a.device()},
      {a.dtype(), residuals ? With(s.batch, {s.k}) : Shape{0}, a.device()},
      {DType::kInt64, d != D::kGels ? Batch(a) : Shape{0}, a.device()},
      {a.dtype(), svd ? With(Batch(a), {std::min(s.m, s.n)}) : Shape{0},
       a.device()}};
}

absl::Status CpuLstsq(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  const Tensor& a = in[0];
  TD_ASSIGN_OR_RETURN(LstsqShapes s, CheckLstsq(a, in[1]));
  TD_ASSIGN_OR_RETURN(cpu::LstsqDriver d, Driver(attrs));
  Tensor b = in[1];
  if (s.vector) {  // b[..., None]
    Shape shape = b.shape();
    Strides strides = b.strides();
    shape.push_back(1);
    strides.push_back(1);
    b = b.AsStrided(shape, strides, b.offset());
  }
  TD_ASSIGN_OR_RETURN(Tensor a_e,
                      ExpandContiguous(a, With(s.batch, {s.m, s.n}), ctx));
  TD_ASSIGN_OR_RETURN(Tensor b_e,
                      ExpandContiguous(b, With(s.batch, {s.m, s.k}), ctx));
  const double eps = a.dtype() == DType::kFloat64
                         ? std::numeric_limits<double>::epsilon()
                         : std::numeric_limits<float>::epsilon();
  const double rcond = attrs.Has("rcond")
                           ? attrs.Float("rcond")
                           : eps * static_cast<double>(std::max(s.m, s.n));
  const Tensor solution = Reshaped(out[0], With(s.batch, {s.n, s.k}));
  // Rank and singular values per broadcast matrix, then A's batch of them.
  const bool broadcast_a = Batch(a) != s.batch;
  Tensor rank_t = out[2], sv_t = out[3];
  if (broadcast_a && rank_t.numel() > 0) {
    TD_ASSIGN_OR_RETURN(
        rank_t, Tensor::Empty(a.device(), DType::kInt64, s.batch, ctx.alloc));
  }
  if (broadcast_a && sv_t.numel() > 0) {
    TD_ASSIGN_OR_RETURN(
        sv_t, Tensor::Empty(a.device(), a.dtype(),
                            With(s.batch, {std::min(s.m, s.n)}), ctx.alloc));
  }
  StridedView residuals = out[1].view(), rank = rank_t.view(), sv = sv_t.view();
  TD_RETURN_IF_ERROR(cpu::Lstsq(
      a_e.view(), b_e.view(), d, rcond, solution.view(),
      out[1].numel() > 0 ? &residuals : nullptr,
      rank_t.numel() > 0 ? &rank : nullptr, sv_t.numel() > 0 ? &sv : nullptr));
  if (!broadcast_a) return absl::OkStatus();
  for (int i : {2, 3}) {
    const Tensor& full = i == 2 ? rank_t : sv_t;
    if (out[i].numel() == 0) continue;
    // A's batch indexes the broadcast one at 0 where it broadcasts (size 1).
    TD_ASSIGN_OR_RETURN(
        Tensor picked, Contiguous(full.AsStrided(out[i].shape(), full.strides(),
                                                 full.offset()),
                                  ctx));
    std::memcpy(out[i].data(), picked.data(), out[i].nbytes());
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<OpDef> LapackQrOps() {
  std::vector<OpDef> ops;
  ops.push_back(Row(
      "geqrf", 1, 2, {},
      "(a, tau): the QR of A [.., m, n] in LAPACK's compact form (geqrf): R on "
      "and above the diagonal, the Householder vectors below it, their "
      "scales tau [.., min(m, n)].",
      InferGeqrf, CpuGeqrf,
      {Example({{3, 3}}), Example({{2, 4, 3}}), Example({{3, 5}})}));
  ops.push_back(Differentiable(
      Row("linalg_qr", 1, 2,
          {Optional("mode", AttrType::kString, std::string("reduced"))},
          "(Q, R) with A = QR, Q orthonormal columns, R upper triangular: k = "
          "min(m, n) columns of Q and rows of R ('reduced'), m of each "
          "('complete'), or R only with Q empty ('r') (LAPACK geqrf, orgqr).",
          InferQr, CpuQr,
          {Example({{4, 3}}),
           Example({{2, 3, 5}}, {{"mode", std::string("complete")}}),
           Example({{5, 3}}, {{"mode", std::string("complete")}}),
           Example({{3, 4}}, {{"mode", std::string("r")}})})));
  ops.push_back(Differentiable(
      Row("linalg_householder_product", 2, 1, {},
          "The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, for "
          "the Householder vectors v_i below the diagonal of input [.., m, n] "
          "(unit diagonal implied; m >= n) and tau [.., k], k <= n (LAPACK "
          "orgqr).",
          InferHouseholder, CpuHouseholder,
          {Example({{4, 3}, {3}}), Example({{2, 5, 3}, {2, 2}})})));
  ops.push_back(Differentiable(Row(
      "ormqr", 3, 1, {Flag("left", true), Flag("transpose", false)},
      "op(Q) other (left) or other op(Q), op(Q) = Q^T with transpose, for Q "
      "= H_1 ... H_k of geqrf's (input, tau): input [.., r, >= k] with r "
      "other's rows (left) or columns, tau [.., k]; batches equal (LAPACK "
      "ormqr).",
      InferOrmqr, CpuOrmqr,
      {Example({{4, 3}, {3}, {4, 2}}),
       Example({{2, 3, 3}, {2, 2}, {2, 4, 3}},
               {{"left", false}, {"transpose", true}})})));
  ops.push_back(Differentiable(Row(
      "linalg_lstsq", 2, 4,
      {Optional("rcond", AttrType::kFloat, AttrValue{}),
       Optional("driver", AttrType::kString, AttrValue{})},
      "(solution, residuals, rank, singular_values) minimizing |A X - B| for "
      "A [.., m, n] and B [.., m, k] (or a vector [.., m]), batches "
      "broadcast; driver gels, gelsy (the default), gelsd or gelss as "
      "ATen's CPU kernel, rcond default eps * max(m, n). Residuals [.., k] "
      "for m > n unless gelsy (ATen empties them when gelsd/gelss find rank "
      "< n); rank int64 unless gels; singular values for gelsd/gelss.",
      InferLstsq, CpuLstsq,
      {Example({{5, 3}, {5, 2}}),
       Example({{2, 5, 3}, {2, 5}}, {{"driver", std::string("gelsd")}}),
       Example({{1, 3, 5}, {2, 3, 2}}, {{"driver", std::string("gelss")}}),
       Example({{5, 3}, {5, 2}}, {{"driver", std::string("gels")}})})));
  return ops;
}

}  // namespace tensord
