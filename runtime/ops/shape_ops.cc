// Ops that split, join, copy or convert whole tensors: contiguous, clone,
// to, unbind, split, chunk (views, several outputs), cat, stack.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Views = absl::StatusOr<std::vector<Tensor>>;

Views ContiguousOp(absl::Span<const Tensor> in, const Attrs&,
                   const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor t, Contiguous(in[0], ctx));
  return Views(std::vector<Tensor>{t});
}

absl::StatusOr<std::vector<TensorSpec>> InferClone(absl::Span<const Tensor> in,
                                                   const Attrs&,
                                                   const OpContext&) {
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

absl::Status CpuCopy(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs&, const OpContext&) {
  return cpu::Copy(in[0].view(), out[0].view());
}

// to(dtype, device): this tensor when nothing changes, else a copy.
Views To(absl::Span<const Tensor> in, const Attrs& attrs,
         const OpContext& ctx) {
  const Tensor& t = in[0];
  Device* device = t.device();
  if (!attrs.String("device").empty()) {
    TD_ASSIGN_OR_RETURN(device, ResolveDevice(attrs, ctx));
  }
  const DType dtype = attrs.Has("dtype") ? attrs.GetDType("dtype") : t.dtype();
  if (device == t.device() && dtype == t.dtype() && !attrs.Bool("copy"))
    return Views(std::vector<Tensor>{t});
  TD_ASSIGN_OR_RETURN(Tensor out, ToDevice(t, device, dtype, ctx));
  return Views(std::vector<Tensor>{out});
}

Tensor Narrowed(const Tensor& t, int d, int64_t start, int64_t length) {
  Shape shape = t.shape();
  shape[d] = length;
  return t.AsStrided(shape, t.strides(),
                     t.offset() + (length > 0 ? start * t.strides()[d] : 0));
}

absl::StatusOr<int> DimOf(const Tensor& t, const Attrs& attrs,
                          const char* what) {
  if (t.ndim() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "() cannot be applied to a 0-dim tensor."));
  }
  return WrapDim(attrs.Int("dim"), t.ndim());
}

// Multi-output views make one handle per piece. PyTorch has no bound; a
// shared daemon does, so that one call on a zero-size tensor with a huge
// dimension cannot exhaust the daemon's memory with tensor metadata.
constexpr int64_t kMaxPieces = int64_t{1} << 16;

absl::Status CheckPieces(const char* op, int64_t pieces) {
  if (pieces <= kMaxPieces) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, " would make ", pieces, " outputs; at most ", kMaxPieces,
                   " are allowed per call"));
}

Views Unbind(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int d, DimOf(t, attrs, "unbind"));
  TD_RETURN_IF_ERROR(CheckPieces("unbind", t.shape()[d]));
  std::vector<Tensor> out;
  for (int64_t i = 0; i < t.shape()[d]; ++i) {
    Shape shape = t.shape();
    Strides strides = t.strides();
    shape.erase(shape.begin() + d);
    strides.erase(strides.begin() + d);
    out.push_back(t.AsStrided(shape, strides, t.offset() + i * t.strides()[d]));
  }
  return out;
}

Views Split(absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int d, DimOf(t, attrs, "split"));
  const int64_t size = t.shape()[d];
  const auto& arg = attrs.Ints("split_size_or_sections");
  std::vector<int64_t> sizes;
  if (arg.size() == 1) {
    const int64_t step = arg[0];
    if (step < 0 || (step == 0 && size != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "split expects split_size be non-negative, but got split_size=",
          step));
    }
    if (step > 0)
      TD_RETURN_IF_ERROR(CheckPieces("split", 1 + (size - 1) / step));
    for (int64_t s = 0; s < size; s += step)
      sizes.push_back(std::min(step, size - s));
    if (size == 0) sizes.push_back(0);
  } else {
    int64_t total = 0;
    bool over = false;  // the sizes pass `size` (checked before adding)
    for (int64_t s : arg) {
      if (s < 0) return absl::InvalidArgumentError("split sizes must be >= 0");
      over = over || s > size - total;
      if (!over) total += s;
    }
    if (over || total != size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "split_with_sizes expects split_sizes to sum exactly to ", size,
          " (input tensor's size at dimension ", d,
          "), but got split_sizes=", ShapeToString(arg)));
    }
    sizes = arg;
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(Narrowed(t, d, start, s));
    start += s;
  }
  return out;
}

Views Chunk(absl::Span<const Tensor> in, const Attrs& attrs, const OpContext&) {
  const Tensor& t = in[0];
  TD_ASSIGN_OR_RETURN(int d, DimOf(t, attrs, "chunk"));
  const int64_t chunks = attrs.Int("chunks");
  if (chunks <= 0) {
    return absl::InvalidArgumentError(
        "chunk expects `chunks` to be greater than 0");
  }
  const int64_t size = t.shape()[d];
  // ceil(size / chunks) without overflowing for huge `chunks`.
  const int64_t step = size == 0 ? 0 : 1 + (size - 1) / chunks;
  std::vector<Tensor> out;
  if (step == 0) {  // an empty dim: `chunks` empty pieces, as in PyTorch
    TD_RETURN_IF_ERROR(CheckPieces("chunk", chunks));
    for (int64_t i = 0; i < chunks; ++i) out.push_back(Narrowed(t, d, 0, 0));
    return out;
  }
  for (int64_t s = 0; s < size; s += step) {
    out.push_back(Narrowed(t, d, s, std::min(step, size - s)));
  }
  return out;
}

// cat: every input has the same shape except along dim (1-d empty tensors
// are skipped, as in PyTorch); the result type promotes across inputs.
absl::StatusOr<std::vector<TensorSpec>> InferCat(absl::Span<const Tensor> in,
                                                 const Attrs& attrs,
                                                 const OpContext&) {
  const Tensor* ref = nullptr;
  DType dtype = in[0].dtype();
  for (const Tensor& t : in) {
    dtype = PromoteTypes(dtype, t.dtype());
    if (!(t.ndim() == 1 && t.numel() == 0) && ref == nullptr) ref = &t;
  }
  if (ref == nullptr)
    return std::vector<TensorSpec>{{dtype, {0}, in[0].device()}};
  if (ref->ndim() == 0) {
    return absl::InvalidArgumentError(
        "zero-dimensional tensor cannot be concatenated");
  }
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), ref->ndim()));
  Shape shape = ref->shape();
  shape[d] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (t.ndim() == 1 && t.numel() == 0) continue;
    bool ok = t.ndim() == ref->ndim();
    for (int k = 0; ok && k < t.ndim(); ++k) {
      ok = k == d || t.shape()[k] == ref->shape()[k];
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Sizes of tensors must match except in dimension ", d, ". Expected ",
          ShapeToString(ref->shape()), " but got ", ShapeToString(t.shape()),
          " for tensor number ", i, " in the list."));
    }
    shape[d] += t.shape()[d];
  }
  TD_RETURN_IF_ERROR(CheckShape(shape, ItemSize(dtype)));
  return std::vector<TensorSpec>{{dtype, shape, in[0].device()}};
}

absl::Status CpuCat(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                    const Attrs& attrs, const OpContext& ctx) {
  if (out[0].ndim() == 1 && out[0].numel() == 0) return absl::OkStatus();
  TD_ASSIGN_OR_RETURN(int d, WrapDim(attrs.Int("dim"), out[0].ndim()));
  int64_t start = 0;
  for (const Tensor& t : in) {
    if (t.ndim() == 1 && t.numel() == 0) continue;
    const int64_t n = t.shape()[d];
    TD_RETURN_IF_ERROR(CopyOnDevice(out[0].device(), t.view(),
                                    Narrowed(out[0], d, start, n).view(),
                                    ctx.alloc.stream));
    start += n;
  }
  return absl::OkStatus();
}

Views Stack(absl::Span<const Tensor> in, const Attrs& attrs,
            const OpContext& ctx) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape() != in[0].shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("stack expects each tensor to be equal size, but got ",
                       ShapeToString(in[0].shape()), " at entry 0 and ",
                       ShapeToString(in[i].shape()), " at entry ", i));
    }
  }
  const int64_t dim = attrs.Int("dim");
  TD_RETURN_IF_ERROR(WrapDim(dim, in[0].ndim() + 1).status());
  std::vector<Tensor> parts;
  for (const Tensor& t : in) {
    TD_ASSIGN_OR_RETURN(Tensor u, Call1("unsqueeze", {t}, {{"dim", dim}}, ctx));
    parts.push_back(u);
  }
  TD_ASSIGN_OR_RETURN(Tensor out, Call1("cat", parts, {{"dim", dim}}, ctx));
  return Views(std::vector<Tensor>{out});
}

}  // namespace

std::vector<OpDef> ShapeOps() {
  using I = std::vector<int64_t>;
  std::vector<OpDef> ops;
  OpDef contiguous =
      MakeOp("contiguous", 1, 1, {},
             "This tensor if C-contiguous, else a contiguous copy.");
  contiguous.view = ContiguousOp;
  contiguous.native_half = true;
  ops.push_back(std::move(contiguous));
  OpDef clone = MakeOp("clone", 1, 1, {}, "A contiguous copy.");
  clone.infer = InferClone;
  clone.cpu = CpuCopy;
  clone.native_half = true;
  ops.push_back(std::move(clone));
  OpDef to = MakeOp("to", 1, 1,
                    {Optional("dtype", AttrType::kDType, std::monostate{}),
                     Optional("device", AttrType::kString, std::string()),
                     Optional("copy", AttrType::kBool, false)},
                    "Converted to dtype/device (this tensor if unchanged).");
  to.view = To;
  to.native_half = true;
  to.examples = {Example({{2, 3}}, {{"dtype", DType::kFloat16}}),
                 Example({{2, 3}}, {{"dtype", DType::kInt32}})};
  ops.push_back(std::move(to));
  OpDef unbind =
      MakeOp("unbind", 1, 1, {Optional("dim", AttrType::kInt, int64_t{0})},
             "Views of each slice along dim (that dim removed).");
  unbind.view = Unbind;
  unbind.num_outputs = -1;
  ops.push_back(std::move(unbind));
  OpDef split = MakeOp("split", 1, 1,
                       {Required("split_size_or_sections", AttrType::kInts),
                        Optional("dim", AttrType::kInt, int64_t{0})},
                       "Views of pieces of dim: equal pieces of a size (the "
                       "last may be smaller) or the given sizes.");
  split.view = Split;
  split.num_outputs = -1;
  split.examples = {Example({{5, 2}}, {{"split_size_or_sections", I{2}}}),
                    Example({{5, 2}}, {{"split_size_or_sections", I{1, 4}}})};
  ops.push_back(std::move(split));
  OpDef chunk = MakeOp("chunk", 1, 1,
                       {Required("chunks", AttrType::kInt),
                        Optional("dim", AttrType::kInt, int64_t{0})},
                       "Views of at most `chunks` equal pieces of dim.");
  chunk.view = Chunk;
  chunk.num_outputs = -1;
  chunk.examples = {Example({{5, 2}}, {{"chunks", int64_t{3}}})};
  ops.push_back(std::move(chunk));
  OpDef cat =
      MakeOp("cat", 1, -1, {Optional("dim", AttrType::kInt, int64_t{0})},
             "Tensors joined along an existing dim.");
  cat.infer = InferCat;
  cat.cpu = CpuCat;
  cat.cuda = CudaKernelsBuilt() ? CpuCat : nullptr;  // both devices
  cat.native_half = true;
  cat.examples = {Example({{2, 3}, {4, 3}})};
  ops.push_back(std::move(cat));
  OpDef stack =
      MakeOp("stack", 1, -1, {Optional("dim", AttrType::kInt, int64_t{0})},
             "Tensors of one shape joined along a new dim.");
  stack.composite = Stack;
  stack.examples = {Example({{2, 3}, {2, 3}}, {{"dim", int64_t{1}}})};
  ops.push_back(std::move(stack));
  return ops;
}

}  // namespace tensord
