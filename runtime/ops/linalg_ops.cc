// Linear algebra: matmul with PyTorch's rules for 1-d, 2-d and batched
// (broadcast) operands, on the CPU GEMMs of kernels/cpu/gemm.h; addmm and
// linear.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

// The operands seen as batches of matrices: a [.., M, K], b [.., K, N].
struct MatmulPlan {
  Shape a_mat, b_mat;  // a and b with 1-d operands promoted to matrices
  Shape batch;         // broadcast batch shape
  int64_t m, k, n;
  Shape out;  // final output shape (promoted dims dropped)
};

absl::StatusOr<MatmulPlan> Plan(const Tensor& a, const Tensor& b) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    return absl::InvalidArgumentError(
        "both arguments to matmul need to be at least 1-d, got " +
        absl::StrCat(a.ndim(), "-d and ", b.ndim(), "-d"));
  }
  MatmulPlan p;
  p.a_mat = a.shape();
  p.b_mat = b.shape();
  if (a.ndim() == 1) p.a_mat.insert(p.a_mat.begin(), 1);
  if (b.ndim() == 1) p.b_mat.push_back(1);
  p.m = p.a_mat[p.a_mat.size() - 2];
  p.k = p.a_mat.back();
  p.n = p.b_mat.back();
  if (p.b_mat[p.b_mat.size() - 2] != p.k) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes ", ShapeToString(a.shape()), " and ",
                     ShapeToString(b.shape()), " cannot be multiplied (", p.k,
                     " vs ", p.b_mat[p.b_mat.size() - 2], ")"));
  }
  TD_ASSIGN_OR_RETURN(
      p.batch,
      BroadcastShapes(absl::MakeSpan(p.a_mat).subspan(0, p.a_mat.size() - 2),
                      absl::MakeSpan(p.b_mat).subspan(0, p.b_mat.size() - 2)));
  p.out = p.batch;
  if (a.ndim() > 1) p.out.push_back(p.m);
  if (b.ndim() > 1) p.out.push_back(p.n);
  return p;
}

absl::StatusOr<std::vector<TensorSpec>> InferMatmul(absl::Span<const Tensor> in,
                                                    const Attrs&,
                                                    const OpContext&) {
  if (in[0].dtype() != in[1].dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected both operands to have the same dtype, got ",
        DTypeName(in[0].dtype()), " and ", DTypeName(in[1].dtype())));
  }
  if (in[0].dtype() == DType::kBool) {
    return absl::InvalidArgumentError("matmul is not defined for bool tensors");
  }
  TD_ASSIGN_OR_RETURN(MatmulPlan p, Plan(in[0], in[1]));
  TD_RETURN_IF_ERROR(CheckShape(p.out, ItemSize(in[0].dtype())));
  return std::vector<TensorSpec>{{in[0].dtype(), p.out, in[0].device()}};
}

// `t` as a matrix stack: a 1-d left operand becomes a [1, K] row, a 1-d
// right operand a [K, 1] column (views, stride 0 on the new dim).
Tensor AsMatrix(const Tensor& t, bool left) {
  if (t.ndim() != 1) return t;
  const int64_t k = t.shape()[0], s = t.strides()[0];
  return left ? t.AsStrided({1, k}, {0, s}, t.offset())
              : t.AsStrided({k, 1}, {s, 0}, t.offset());
}

// A matrix stack broadcast to `batch` and flattened to a 3-d view [B, R, C];
// copies (into *keep_alive) only when several batch dims cannot be merged.
absl::StatusOr<StridedView> AsBatch3d(const Tensor& mat, const Shape& batch,
                                      const OpContext& ctx,
                                      Tensor* keep_alive) {
  Shape full = batch;
  full.push_back(mat.shape()[mat.ndim() - 2]);
  full.push_back(mat.shape().back());
  StridedView v = mat.BroadcastView(full);
  const int nb = static_cast<int>(batch.size());
  // Size-1 batch dims take no part: their strides are arbitrary (0 from the
  // broadcast, and a contiguous copy keeps them), so the merged stride is
  // the innermost batch dim of size > 1's. Taking the last dim's stride
  // regardless made [2, 1] batches read batch 0 twice.
  int inner = -1;
  bool mergeable = true;
  for (int d = 0; d < nb; ++d) {
    if (v.sizes[d] == 1) continue;
    if (inner >= 0 && v.strides[inner] != v.strides[d] * v.sizes[d]) {
      mergeable = false;
    }
    inner = d;
  }
  if (!mergeable) {
    Tensor expanded = mat.AsStrided(
        full, Strides(v.strides, v.strides + v.ndim), mat.offset());
    TD_ASSIGN_OR_RETURN(*keep_alive, Contiguous(expanded, ctx));
    v = keep_alive->view();
  }
  StridedView out = v;
  out.ndim = 3;
  out.sizes[0] = NumElements(batch);
  out.strides[0] = inner < 0 ? 0 : v.strides[inner];
  for (int i = 1; i < 3; ++i) {
    out.sizes[i] = v.sizes[nb + i - 1];
    out.strides[i] = v.strides[nb + i - 1];
  }
  return out;
}

absl::Status CpuMatmul(absl::Span<const Tensor> in,
                       absl::Span<const Tensor> out, const Attrs&,
                       const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(MatmulPlan p, Plan(in[0], in[1]));
  Tensor keep_a, keep_b;
  TD_ASSIGN_OR_RETURN(StridedView a,
                      AsBatch3d(AsMatrix(in[0], true), p.batch, ctx, &keep_a));
  TD_ASSIGN_OR_RETURN(StridedView b,
                      AsBatch3d(AsMatrix(in[1], false), p.batch, ctx, &keep_b));
  StridedView o = out[0].view();
  o.ndim = 3;
  o.sizes[0] = NumElements(p.batch);
  o.sizes[1] = p.m;
  o.sizes[2] = p.n;
  o.strides[2] = 1;
  o.strides[1] = p.n;
  o.strides[0] = p.m * p.n;
  return DeviceBatchedMatmul(out[0], ctx, a, b, o);
}

// mm: exactly 2-d operands; bmm: 3-d with equal batch sizes.
template <int kRank>
absl::StatusOr<std::vector<TensorSpec>> InferFixedRank(
    absl::Span<const Tensor> in, const Attrs& attrs, const OpContext& ctx) {
  const char* what = kRank == 2 ? "mm" : "bmm";
  for (const Tensor& t : in) {
    if (t.ndim() != kRank) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": expected ", kRank, "-d tensors, got shapes ",
          ShapeToString(in[0].shape()), " and ", ShapeToString(in[1].shape())));
    }
  }
  if (kRank == 3 && in[0].shape()[0] != in[1].shape()[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat("bmm: batch sizes differ: ", ShapeToString(in[0].shape()),
                     " and ", ShapeToString(in[1].shape())));
  }
  return InferMatmul(in, attrs, ctx);
}

// addmm(input, mat1, mat2): beta * input + alpha * (mat1 @ mat2).
absl::StatusOr<std::vector<Tensor>> Addmm(absl::Span<const Tensor> in,
                                          const Attrs& attrs,
                                          const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor prod, Call1("mm", {in[1], in[2]}, {}, ctx));
  TD_RETURN_IF_ERROR(BroadcastShapes(in[0].shape(), prod.shape()).status());
  const double beta = attrs.Float("beta"), alpha = attrs.Float("alpha");
  Tensor bias = in[0];
  if (beta != 1) {
    TD_ASSIGN_OR_RETURN(Tensor b,
                        Scalar(beta, in[0].dtype(), in[0].device(), ctx));
    TD_ASSIGN_OR_RETURN(bias, Call1("mul", {in[0], b}, {}, ctx));
  }
  if (beta == 0) {  // beta = 0 ignores input, NaNs included (PyTorch)
    TD_ASSIGN_OR_RETURN(bias, Scalar(0, in[0].dtype(), in[0].device(), ctx));
  }
  TD_ASSIGN_OR_RETURN(Tensor out, Call1("add", {prod, bias}, {}, ctx));
  if (alpha != 1) {
    TD_ASSIGN_OR_RETURN(Tensor a,
                        Scalar(alpha, prod.dtype(), prod.device(), ctx));
    TD_ASSIGN_OR_RETURN(Tensor scaled, Call1("mul", {prod, a}, {}, ctx));
    TD_ASSIGN_OR_RETURN(out, Call1("add", {scaled, bias}, {}, ctx));
  }
  if (out.shape() != prod.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("addmm: input of shape ", ShapeToString(in[0].shape()),
                     " does not broadcast to ", ShapeToString(prod.shape())));
  }
  return std::vector<Tensor>{out};
}

// Note [Fused linear]: on the CPU, contiguous float32/float64 operands with a
// 2-d weight (nn.Linear's case) take one GEMM whose output starts as the
// bias, broadcast down the rows (beta = 1; cpu::GemmBias sets each block of
// the output to it on the thread that computes the block, right before its
// product), instead of t, matmul and a broadcast add: no second pass over
// the output, no temporary, one row and one graph node (the formula in
// derivatives_nn.cc) where there were three.
bool FusedLinearApplies(absl::Span<const Tensor> in) {
  const Tensor &x = in[0], &w = in[1];
  if (x.device()->kind() != DeviceKind::kCpu ||
      (x.dtype() != DType::kFloat32 && x.dtype() != DType::kFloat64) ||
      x.ndim() == 0 || w.ndim() != 2 || !x.is_contiguous() ||
      !w.is_contiguous() || w.dtype() != x.dtype() ||
      w.device() != x.device() || w.shape()[1] != x.shape().back() ||
      x.numel() == 0 || w.numel() == 0) {
    return false;
  }
  if (in.size() == 3) {
    const Tensor& b = in[2];
    if (b.ndim() != 1 || b.shape()[0] != w.shape()[0] ||
        b.dtype() != x.dtype() || b.device() != x.device() ||
        !b.is_contiguous()) {
      return false;
    }
  }
  return true;
}

template <typename T>
void LinearInto(absl::Span<const Tensor> in, int64_t m, int64_t n, int64_t k,
                T* out) {
  const T* x = static_cast<const T*>(in[0].data());
  const T* w = static_cast<const T*>(in[1].data());
  if (in.size() == 3) {
    cpu::GemmBias<T>(false, true, m, n, k, x, k, w, k,
                     static_cast<const T*>(in[2].data()), out, n);
  } else {
    cpu::Gemm<T>(false, true, m, n, k, x, k, w, k, T{0}, out, n);
  }
}

absl::StatusOr<std::vector<Tensor>> FusedLinear(absl::Span<const Tensor> in,
                                                const OpContext& ctx) {
  Shape shape = in[0].shape();
  const int64_t k = shape.back(), n = in[1].shape()[0];
  const int64_t m = in[0].numel() / k;
  shape.back() = n;
  TD_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(in[0].device(), in[0].dtype(),
                                                shape, ctx.alloc));
  if (in[0].dtype() == DType::kFloat64) {
    LinearInto(in, m, n, k, static_cast<double*>(out.data()));
  } else {
    LinearInto(in, m, n, k, static_cast<float*>(out.data()));
  }
  return std::vector<Tensor>{out};
}

// linear(input, weight, bias?): input @ weight.T + bias.
absl::StatusOr<std::vector<Tensor>> Linear(absl::Span<const Tensor> in,
                                           const Attrs&, const OpContext& ctx) {
  if (in[1].ndim() != 2 && in[1].ndim() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear: weight must be 1-d or 2-d, got shape ",
                     ShapeToString(in[1].shape())));
  }
  if (FusedLinearApplies(in)) return FusedLinear(in, ctx);
  TD_ASSIGN_OR_RETURN(Tensor wt, Call1("t", {in[1]}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor out, Call1("matmul", {in[0], wt}, {}, ctx));
  if (in.size() == 3) {
    TD_ASSIGN_OR_RETURN(out, Call1("add", {out, in[2]}, {}, ctx));
  }
  return std::vector<Tensor>{out};
}

}  // namespace

std::vector<OpDef> LinalgOps() {
  std::vector<OpDef> ops;
  OpDef matmul =
      MakeOp("matmul", 2, 2, {},
             "Matrix product with NumPy/PyTorch batching and 1-d rules.");
  matmul.infer = InferMatmul;
  matmul.cpu = CpuMatmul;
  matmul.cuda = CudaKernelsBuilt() ? CpuMatmul : nullptr;
  matmul.native_half_cuda = true;  // Note [Half GEMM]
  matmul.examples = {Example({{2, 3}, {3, 4}}), Example({{2, 2, 3}, {3}})};
  ops.push_back(std::move(matmul));
  OpDef mm = MakeOp("mm", 2, 2, {}, "Product of two matrices.");
  mm.infer = InferFixedRank<2>;
  mm.cpu = CpuMatmul;
  mm.cuda = CudaKernelsBuilt() ? CpuMatmul : nullptr;
  mm.native_half_cuda = true;  // Note [Half GEMM]
  mm.examples = {Example({{2, 3}, {3, 4}})};
  ops.push_back(std::move(mm));
  OpDef bmm =
      MakeOp("bmm", 2, 2, {}, "Batched product of [b, n, m] and [b, m, p].");
  bmm.infer = InferFixedRank<3>;
  bmm.cpu = CpuMatmul;
  bmm.cuda = CudaKernelsBuilt() ? CpuMatmul : nullptr;
  bmm.native_half_cuda = true;  // Note [Half GEMM]
  bmm.examples = {Example({{2, 2, 3}, {2, 3, 4}})};
  ops.push_back(std::move(bmm));
  OpDef addmm = MakeOp("addmm", 3, 3,
                       {Optional("beta", AttrType::kFloat, 1.0),
                        Optional("alpha", AttrType::kFloat, 1.0)},
                       "beta * input + alpha * (mat1 @ mat2).");
  addmm.composite = Addmm;
  addmm.examples = {
      Example({{4}, {2, 3}, {3, 4}}, {{"beta", 0.5}, {"alpha", 2.0}})};
  ops.push_back(std::move(addmm));
  OpDef linear =
      MakeOp("linear", 2, 3, {}, "input @ weight.T + bias (bias optional).");
  linear.composite = Linear;
  linear.examples = {Example({{2, 3}, {4, 3}, {4}}),
                     Example({{5, 2, 3}, {4, 3}})};
  ops.push_back(std::move(linear));
  return ops;
}

}  // namespace tensord
