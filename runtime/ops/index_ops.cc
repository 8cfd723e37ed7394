// Indexing: index_select, gather, scatter, scatter_add, index_put,
// nonzero_static (scatter_reduce, index_reduce: scatter_reduce_ops.cc;
// embedding: embedding_ops.cc). Index
// tensors are int64; their values are checked by the kernels before any write
// (they are data, not shapes).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/index.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/index_checks.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {

absl::Status RequireInt64(const Tensor& t, const char* what) {
  if (t.dtype() == DType::kInt64) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, "(): Expected dtype int64 for index, got ", DTypeName(t.dtype())));
}

absl::Status CheckIndexShape(const Tensor& self, const Tensor& index, int d,
                             const char* what) {
  if (index.numel() == 0) return absl::OkStatus();
  if (index.ndim() != self.ndim() && !(index.ndim() <= 1 && self.ndim() <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        "(): Index tensor must have the same number of dimensions as "
        "input tensor (",
        ShapeToString(index.shape()), " vs ", ShapeToString(self.shape()),
        ")"));
  }
  for (int k = 0; k < index.ndim() && k < self.ndim(); ++k) {
    if (k != d && index.shape()[k] > self.shape()[k]) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "(): Size does not match at dimension ", k, " expected index ",
          ShapeToString(index.shape()), " to be smaller than self ",
          ShapeToString(self.shape()), " apart from dimension ", d));
    }
  }
  return absl::OkStatus();
}

StridedView AtLeast1d(StridedView v) {
  if (v.ndim == 0) {
    v.ndim = 1;
    v.sizes[0] = 1;
    v.strides[0] = 1;
  }
  return v;
}

namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Outs = absl::StatusOr<std::vector<Tensor>>;

Specs InferIndexSelect(absl::Span<const Tensor> in, const Attrs& attrs,
                       const OpContext&) {
  TD_RETURN_IF_ERROR(RequireInt64(in[1], "index_select"));
  if (in[1].ndim() > 1) {
    return absl::InvalidArgumentError(
        "index_select(): Index is supposed to be a vector");
  }
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  Shape shape = in[0].shape();
  if (!shape.empty()) shape[d] = in[1].numel();
  return std::vector<TensorSpec>{{in[0].dtype(), shape, in[0].device()}};
}

absl::Status CpuIndexSelect(absl::Span<const Tensor> in,
                            absl::Span<const Tensor> out, const Attrs& attrs,
                            const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor idx, Contiguous(in[1], ctx));
  return DeviceIndexSelect(out[0], ctx, x.view(), d, idx.view(), out[0].view());
}

Specs InferGather(absl::Span<const Tensor> in, const Attrs& attrs,
                  const OpContext&) {
  TD_RETURN_IF_ERROR(RequireInt64(in[1], "gather"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_RETURN_IF_ERROR(CheckIndexShape(in[0], in[1], d, "gather"));
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[1].shape(), in[0].device()}};
}

absl::Status CpuGather(absl::Span<const Tensor> in,
                       absl::Span<const Tensor> out, const Attrs& attrs,
                       const OpContext& ctx) {
  if (in[1].numel() == 0) return absl::OkStatus();
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  TD_ASSIGN_OR_RETURN(Tensor idx, Contiguous(in[1], ctx));
  return DeviceGather(out[0], ctx, AtLeast1d(x.view()), d,
                      AtLeast1d(idx.view()), AtLeast1d(out[0].view()));
}

// scatter(input, index, src): src is a tensor at least index's size, or a
// 0-d value broadcast to index's shape.
Specs InferScatter(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  TD_RETURN_IF_ERROR(RequireInt64(in[1], "scatter"));
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_RETURN_IF_ERROR(CheckIndexShape(in[0], in[1], d, "scatter"));
  if (in[2].ndim() != 0) {
    TD_RETURN_IF_ERROR(CheckIndexShape(in[2], in[1], -1, "scatter"));
  }
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

// Note [Row scatter_add] (kernels/cpu/index.h): scatter_add along dim 0 of a
// CPU float matrix whose [n, D] index repeats one column (an expanded view:
// index_select's gradient) adds whole rows, reading the column in place.
bool RowScatterAdd(const Tensor& out, const Tensor& index, const Tensor& src,
                   int dim) {
  const DType t = out.dtype();
  return dim == 0 && out.device()->kind() == DeviceKind::kCpu &&
         (t == DType::kFloat32 || t == DType::kFloat64) && out.ndim() == 2 &&
         index.ndim() == 2 && index.strides()[1] == 0 &&
         index.shape()[1] == out.shape()[1] && src.dtype() == t &&
         src.device() == out.device() && src.ndim() == 2 &&
         src.shape() == index.shape() && src.is_contiguous();
}

template <bool kAdd>
absl::Status CpuScatter(absl::Span<const Tensor> in,
                        absl::Span<const Tensor> out, const Attrs& attrs,
                        const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), in[0].ndim()));
  TD_RETURN_IF_ERROR(CopyOnDevice(out[0].device(), in[0].view(), out[0].view(),
                                  ctx.alloc.stream));
  if (in[1].numel() == 0) return absl::OkStatus();
  if (kAdd && RowScatterAdd(out[0], in[1], in[2], d)) {
    return cpu::ScatterAddRows(
        out[0].view(), static_cast<const int64_t*>(in[1].data()),
        in[1].strides()[0], in[1].shape()[0], in[2].view());
  }
  TD_ASSIGN_OR_RETURN(Tensor idx, Contiguous(in[1], ctx));
  Tensor src = in[2];
  if (src.ndim() == 0 && in[1].ndim() > 0) {
    src = src.AsStrided(in[1].shape(), Strides(in[1].ndim(), 0), src.offset());
  }
  TD_ASSIGN_OR_RETURN(src, CastTo(src, out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(src, Contiguous(src, ctx));
  return DeviceScatter(out[0], ctx, AtLeast1d(out[0].view()), d,
                       AtLeast1d(idx.view()), AtLeast1d(src.view()), kAdd);
}

// index_put(input, values, index; accumulate): item assignment with one
// index, input[index] = values (+= when accumulate). A bool index masks the
// leading dims of input and values broadcast to the rest (x[mask] = 0):
// where(mask, values, input). An int64 index picks along dim 0 (x[idx] = v,
// negative entries count from the end) and values broadcast to [len(idx),
// *input.shape[1:]]: scatter (scatter_add when accumulate; without it a
// repeated index keeps one of its values, as on PyTorch's CPU).
Outs IndexPut(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  const Tensor &x = in[0], &index = in[2];
  const bool acc = attrs.Bool("accumulate");
  Tensor v = in[1];
  if (v.dtype() != x.dtype()) {
    TD_ASSIGN_OR_RETURN(v, Call1("to", {v}, {{"dtype", x.dtype()}}, ctx));
  }
  if (index.dtype() == DType::kBool) {
    const int k = index.ndim();
    if (k > x.ndim() || !std::equal(index.shape().begin(), index.shape().end(),
                                    x.shape().begin())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index_put(): the mask's shape ", ShapeToString(index.shape()),
          " does not match the leading dims of input ",
          ShapeToString(x.shape())));
    }
    if (v.ndim() > x.ndim() - k) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index_put(): not supported yet: values of shape ",
          ShapeToString(v.shape()), " per masked element of input ",
          ShapeToString(x.shape()),
          " (use values broadcastable to input's dims after the mask's, or "
          "torch.where)"));
    }
    std::vector<int64_t> mshape(index.shape().begin(), index.shape().end());
    mshape.resize(x.ndim(), 1);
    TD_ASSIGN_OR_RETURN(Tensor mask,
                        Call1("reshape", {index}, {{"shape", mshape}}, ctx));
    if (acc) {
      TD_ASSIGN_OR_RETURN(v, Call1("add", {x, v}, {}, ctx));
    }
    TD_ASSIGN_OR_RETURN(Tensor out, Call1("where", {mask, v, x}, {}, ctx));
    return std::vector<Tensor>{out};
  }
  if (index.dtype() != DType::kInt64 || index.ndim() != 1 || x.ndim() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index_put(): not supported yet: index of dtype ",
        DTypeName(index.dtype()), " and shape ", ShapeToString(index.shape()),
        " into input ", ShapeToString(x.shape()),
        " (use a bool mask or a 1-d int64 index along dim 0)"));
  }
  // Negative indices wrap: idx + n where idx < 0.
  TD_ASSIGN_OR_RETURN(Tensor zero, Scalar(0, DType::kInt64, x.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor n, Scalar(static_cast<double>(x.shape()[0]),
                                       DType::kInt64, x.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor neg, Call1("lt", {index, zero}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor wrapped, Call1("add", {index, n}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor idx,
                      Call1("where", {neg, wrapped, index}, {}, ctx));
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end());
  shape[0] = index.shape()[0];
  std::vector<int64_t> lay(x.ndim(), 1);
  lay[0] = -1;
  TD_ASSIGN_OR_RETURN(idx, Call1("reshape", {idx}, {{"shape", lay}}, ctx));
  TD_ASSIGN_OR_RETURN(idx, Call1("expand", {idx}, {{"size", shape}}, ctx));
  TD_ASSIGN_OR_RETURN(v, Call1("expand", {v}, {{"size", shape}}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor out,
                      Call1(acc ? "scatter_add" : "scatter", {x, idx, v},
                            {{"dim", int64_t{0}}}, ctx));
  return std::vector<Tensor>{out};
}

// nonzero_static(input, size, fill_value): a fixed-size answer to a
// data-dependent question, so the output's shape is known before the data
// (Note [Infer before compute]); clients that want every coordinate read the
// count first (torch.nonzero, masked_select).
Specs InferNonzeroStatic(absl::Span<const Tensor> in, const Attrs& attrs,
                         const OpContext&) {
  const int64_t size = attrs.Int("size");
  if (size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nonzero_static(): size must be non-negative, got ", size));
  }
  return std::vector<TensorSpec>{
      {DType::kInt64, Shape{size, in[0].ndim()}, in[0].device()}};
}

absl::Status NonzeroStatic(absl::Span<const Tensor> in,
                           absl::Span<const Tensor> out, const Attrs& attrs,
                           const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, Contiguous(in[0], ctx));
  return DeviceNonzeroStatic(out[0], ctx, x.view(), attrs.Int("fill_value"));
}

}  // namespace

std::vector<OpDef> IndexOps() {
  const AttrSpec dim = Required("dim", AttrType::kInt);
  std::vector<OpDef> ops;
  OpDef is = MakeOp("index_select", 2, 2, {dim},
                    "Entries of input at `index` (1-d int64) along dim.");
  is.infer = InferIndexSelect;
  is.cpu = CpuIndexSelect;
  is.cuda = CudaKernelsBuilt() ? CpuIndexSelect : nullptr;
  is.native_half = true;
  is.examples = {Example({{3, 4}, {5}}, {{"dim", int64_t{1}}},
                         {DType::kFloat32, DType::kInt64})};
  ops.push_back(std::move(is));
  OpDef gather = MakeOp("gather", 2, 2, {dim},
                        "out[i][j] = input[index[i][j]][j] (dim 0), etc.");
  gather.infer = InferGather;
  gather.cpu = CpuGather;
  gather.cuda = CudaKernelsBuilt() ? CpuGather : nullptr;
  gather.native_half = true;
  gather.examples = {Example({{3, 4}, {2, 4}}, {{"dim", int64_t{0}}},
                             {DType::kFloat32, DType::kInt64})};
  ops.push_back(std::move(gather));
  for (bool add : {false, true}) {
    OpDef def = MakeOp(add ? "scatter_add" : "scatter", 3, 3, {dim},
                       add ? "input with src added at index along dim."
                           : "input with src written at index along dim.");
    def.infer = InferScatter;
    def.cpu = add ? CpuScatter<true> : CpuScatter<false>;
    def.cuda = CudaKernelsBuilt() ? def.cpu : nullptr;
    def.examples = {Example({{3, 4}, {2, 4}, {2, 4}}, {{"dim", int64_t{0}}},
                            {DType::kFloat32, DType::kInt64, DType::kFloat32})};
    ops.push_back(std::move(def));
  }
  OpDef put = MakeOp("index_put", 3, 3,
                     {Optional("accumulate", AttrType::kBool, false)},
                     "input with values written (added, when accumulate) at "
                     "index: a bool mask of input's leading dims, or a 1-d "
                     "int64 index along dim 0; inputs (input, values, index).");
  put.composite = IndexPut;
  put.examples = {Example({{3, 4}, {}, {3, 4}}, {},
                          {DType::kFloat32, DType::kFloat32, DType::kBool}),
                  Example({{3, 4}, {2, 4}, {2}}, {{"accumulate", true}},
                          {DType::kFloat32, DType::kFloat32, DType::kInt64})};
  ops.push_back(std::move(put));
  OpDef nz = MakeOp("nonzero_static", 1, 1,
                    {Required("size", AttrType::kInt),
                     Optional("fill_value", AttrType::kInt, int64_t{-1})},
                    "[size, input.dim()] int64: the coordinates of the first "
                    "`size` nonzero elements in row-major order (NaN counts), "
                    "rows past the last one filled with fill_value.");
  nz.infer = InferNonzeroStatic;
  nz.cpu = NonzeroStatic;
  nz.cuda = CudaKernelsBuilt() ? NonzeroStatic : nullptr;
  nz.native_half = true;
  nz.differentiable = false;
  nz.examples = {
      Example({{3, 4}}, {{"size", int64_t{5}}}),
      Example({{2, 3}}, {{"size", int64_t{8}}, {"fill_value", int64_t{7}}})};
  ops.push_back(std::move(nz));
  return ops;
}

}  // namespace tensord
