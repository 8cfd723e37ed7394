// torch.histogramdd's ops (PyTorch's aten ops of the same names;
// kernels/cpu/histogramdd.h): _histogramdd_bin_edges (one edges tensor per
// dim, D outputs), _histogramdd_from_bin_cts (the histogram from bin counts)
// and _histogramdd_from_bin_tensors (from edge tensors). self is [..., D],
// its rows the points; `bins` the counts per dim, `range` (lo, hi per dim) or
// none, density; the optional weight (self's shape less its last dim) is the
// last input; the edge tensors come between self and it. Not differentiable
// (as in PyTorch). CPU only (in KnownCpuOnly). Half data computes in float32
// (Note [Half compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/histogramdd.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Ints = std::vector<int64_t>;
constexpr char kEdges[] = "_histogramdd_bin_edges";
constexpr char kCounts[] = "_histogramdd_from_bin_cts";
constexpr char kTensors[] = "_histogramdd_from_bin_tensors";

// self floating with >= 2 dims; weight (when given) of self's dtype and
// shape less the last dim (histogramdd_check_inputs). Returns D.
absl::StatusOr<int64_t> CheckSelf(const Tensor& self, const Tensor* weight,
                                  const char* op) {
  TD_RETURN_IF_ERROR(RequireFloating(self, op));
  if (self.ndim() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(op,
                     ": torch.histogramdd: input tensor should have at least 2 "
                     "dimensions, but got ",
                     self.ndim()));
  }
  if (weight != nullptr && (weight->dtype() != self.dtype() ||
                            weight->shape() != Shape(self.shape().begin(),
                                                     self.shape().end() - 1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": torch.histogramdd: if weight tensor is provided it should have "
        "the input's dtype and shape excluding its innermost dimension, "
        "but got input ",
        DTypeName(self.dtype()), ShapeToString(self.shape()), " and weight ",
        DTypeName(weight->dtype()), ShapeToString(weight->shape())));
  }
  return self.shape().back();
}

// bins (one positive count per dim) and range (none or 2 * D values).
absl::Status CheckCounts(int64_t d, const Attrs& attrs, const char* op) {
  const Ints& bins = attrs.Ints("bins");
  if (static_cast<int64_t>(bins.size()) != d) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": histogramdd: The size of bins must be equal to the innermost "
        "dimension of the input: ",
        bins.size(), " bin counts for ", d, " dims"));
  }
  for (size_t j = 0; j < bins.size(); ++j) {
    if (bins[j] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": torch.histogram(): bins must be > 0, but got ",
                       bins[j], " for dimension ", j));
    }
  }
  if (attrs.Has("range") &&
      static_cast<int64_t>(attrs.Floats("range").size()) != 2 * d) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": torch.histogramdd: for a ", d,
        "-dimensional histogram range "
        "should have ",
        2 * d, " elements, but got ", attrs.Floats("range").size()));
  }
  return absl::OkStatus();
}

// self's contiguous data as [M, D].
StridedView Rows(const Tensor& self) {
  StridedView v = self.view();
  const int64_t d = self.shape().back();
  int64_t m = 1;
  for (int i = 0; i + 1 < self.ndim(); ++i) m *= self.shape()[i];
  v.ndim = 2;
  v.sizes[0] = m;
  v.sizes[1] = d;
  v.strides[0] = d;
  v.strides[1] = 1;
  return v;
}

// The linspace edges of every dim into `edges` (D contiguous 1-d views).
absl::Status FillEdges(const Tensor& self, const Attrs& attrs,
                       const std::vector<StridedView>& edges) {
  std::vector<double> lo, hi, range;
  if (attrs.Has("range")) range = attrs.Floats("range");
  TD_RETURN_IF_ERROR(cpu::HistogramddOuterEdges(Rows(self), range, &lo, &hi));
  for (size_t j = 0; j < edges.size(); ++j) {
    TD_RETURN_IF_ERROR(cpu::HistogramddLinspace(lo[j], hi[j], edges[j]));
  }
  return absl::OkStatus();
}

Specs InferEdges(absl::Span<const Tensor> in, const Attrs& attrs,
                 const OpContext&) {
  const Tensor& self = in[0];
  TD_ASSIGN_OR_RETURN(
      int64_t d, CheckSelf(self, in.size() == 2 ? &in[1] : nullptr, kEdges));
  TD_RETURN_IF_ERROR(CheckCounts(d, attrs, kEdges));
  std::vector<TensorSpec> specs;
  for (int64_t b : attrs.Ints("bins")) {
    specs.push_back({self.dtype(), Shape{b + 1}, self.device()});
  }
  return specs;
}

absl::Status Edges(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                   const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor self, Contiguous(in[0], ctx));
  std::vector<StridedView> edges;
  for (const Tensor& t : out) edges.push_back(t.view());
  return FillEdges(self, attrs, edges);
}

Specs InferCounts(absl::Span<const Tensor> in, const Attrs& attrs,
                  const OpContext&) {
  const Tensor& self = in[0];
  TD_ASSIGN_OR_RETURN(
      int64_t d, CheckSelf(self, in.size() == 2 ? &in[1] : nullptr, kCounts));
  TD_RETURN_IF_ERROR(CheckCounts(d, attrs, kCounts));
  const Ints& bins = attrs.Ints("bins");
  return std::vector<TensorSpec>{
      {self.dtype(), Shape(bins.begin(), bins.end()), self.device()}};
}

absl::Status Counts(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                    const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  std::vector<Tensor> scratch;
  std::vector<StridedView> edges;
  for (int64_t b : attrs.Ints("bins")) {
    TD_ASSIGN_OR_RETURN(Tensor e, Tensor::Empty(c[0].device(), c[0].dtype(),
                                                Shape{b + 1}, ctx.alloc));
    edges.push_back(e.view());
    scratch.push_back(std::move(e));
  }
  TD_RETURN_IF_ERROR(FillEdges(c[0], attrs, edges));
  return cpu::Histogramdd(
      Rows(c[0]), c.size() == 2 ? c[1].view() : StridedView{}, edges,
      /*linear=*/true, attrs.Bool("density"), out[0].view());
}

Specs InferTensors(absl::Span<const Tensor> in, const Attrs&,
                   const OpContext&) {
  const Tensor& self = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(self, kTensors));
  if (self.ndim() < 2) return CheckSelf(self, nullptr, kTensors).status();
  const int64_t d = self.shape().back();
  const int64_t n = static_cast<int64_t>(in.size());
  if (n != d + 1 && n != d + 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTensors, ": torch.histogramdd: expected ", d,
                     " sequences of bin edges for a ", d,
                     "-dimensional histogram (then an "
                     "optional weight) but got ",
                     n - 1, " tensors after the input"));
  }
  TD_RETURN_IF_ERROR(
      CheckSelf(self, n == d + 2 ? &in[n - 1] : nullptr, kTensors).status());
  Shape shape;
  for (int64_t j = 0; j < d; ++j) {
    const Tensor& b = in[1 + j];
    if (b.dtype() != self.dtype() || b.ndim() != 1 || b.numel() < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTensors, ": torch.histogramdd: the bins of dimension ",
                       j, " should be a 1-d ", DTypeName(self.dtype()),
                       " tensor of at least 2 edges (bins must be > 0), got ",
                       DTypeName(b.dtype()), ShapeToString(b.shape())));
    }
    shape.push_back(b.numel() - 1);
  }
  return std::vector<TensorSpec>{{self.dtype(), shape, self.device()}};
}

absl::Status Tensors(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  const int64_t d = c[0].shape().back();
  std::vector<StridedView> edges;
  for (int64_t j = 0; j < d; ++j) edges.push_back(c[1 + j].view());
  const bool weighted = static_cast<int64_t>(c.size()) == d + 2;
  return cpu::Histogramdd(
      Rows(c[0]), weighted ? c.back().view() : StridedView{}, edges,
      /*linear=*/false, attrs.Bool("density"), out[0].view());
}

std::vector<AttrSpec> CountAttrs() {
  return {Required("bins", AttrType::kInts),
          Optional("range", AttrType::kFloats, std::monostate{}),
          Optional("density", AttrType::kBool, false)};
}

}  // namespace

std::vector<OpDef> HistogramddOps() {
  std::vector<OpDef> ops;
  OpDef edges = MakeOp(
      kEdges, 1, 2, CountAttrs(),
      "(self [..., D], weight?) -> D tensors: each dim's bins + 1 evenly "
      "spaced edges over `range` or the data's min and max "
      "(torch.histogramdd).");
  edges.num_outputs = -1;
  edges.differentiable = false;
  edges.infer = InferEdges;
  edges.cpu = Edges;
  edges.examples = {Example({{6, 2}}, {{"bins", Ints{3, 4}}})};
  ops.push_back(std::move(edges));
  OpDef counts = MakeOp(
      kCounts, 1, 2, CountAttrs(),
      "(self [..., D], weight?) -> hist [*bins]: the rows' D-dimensional "
      "histogram over _histogramdd_bin_edges' edges (weighted, density).");
  counts.differentiable = false;
  counts.infer = InferCounts;
  counts.cpu = Counts;
  counts.examples = {
      Example({{6, 2}, {6}}, {{"bins", Ints{3, 4}},
                              {"range", std::vector<double>{-1, 1, 0, 2}},
                              {"density", true}})};
  ops.push_back(std::move(counts));
  OpDef tensors = MakeOp(
      kTensors, 1, -1, {Optional("density", AttrType::kBool, false)},
      "(self [..., D], edges_0, ..., edges_{D-1}, weight?) -> hist: the rows' "
      "histogram over the given edges (binary search; weighted, density).");
  tensors.differentiable = false;
  tensors.infer = InferTensors;
  tensors.cpu = Tensors;
  tensors.examples = {Example({{6, 2}, {4}, {3}})};
  ops.push_back(std::move(tensors));
  return ops;
}

}  // namespace tensord
