// _upsample_bilinear2d_aa and _upsample_bilinear2d_aa_backward (PyTorch's
// aten ops of the same names and schemas, what F.interpolate(mode="bilinear",
// antialias=True) calls; kernels/cpu/upsample_aa.h). Each is the other's
// gradient (both are linear), as in ATen's derivatives.yaml. scales_h and
// scales_w are optional floats (None: the sizes' ratio). CPU only (in
// KnownCpuOnly). Half inputs compute in float32 (Note [Half compute]).
#include "absl/strings/str_cat.h"
#include "kernels/cpu/upsample_aa.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/derivatives.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Specs = absl::StatusOr<std::vector<TensorSpec>>;
using Ints = std::vector<int64_t>;
constexpr char kForward[] = "_upsample_bilinear2d_aa";
constexpr char kBackward[] = "_upsample_bilinear2d_aa_backward";

cpu::AaResample HowOf(const Attrs& attrs) {
  cpu::AaResample how;
  how.align_corners = attrs.Bool("align_corners");
  if (attrs.Has("scales_h")) how.scale_h = attrs.Float("scales_h");
  if (attrs.Has("scales_w")) how.scale_w = attrs.Float("scales_w");
  return how;
}

// ATen's upsample_2d_common_check: output_size of 2 positive sizes, an
// input_size [N, C, H, W] with positive H and W (N may be 0 when C, H, W
// are not). Returns the output's shape [N, C, OH, OW].
absl::StatusOr<Shape> OutputShape(const Ints& input_size, const Attrs& attrs,
                                  const char* op) {
  const Ints& out = attrs.Ints("output_size");
  if (out.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": it is expected output_size equals to 2, but got size ",
        out.size()));
  }
  if (input_size.size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": it is expected input_size equals to 4, but got size ",
        input_size.size()));
  }
  if (input_size[2] <= 0 || input_size[3] <= 0 || out[0] <= 0 || out[1] <= 0 ||
      input_size[0] < 0 || input_size[1] <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        op,
        ": input and output sizes should be greater than 0, but got input "
        "(H: ",
        input_size[2], ", W: ", input_size[3], ") output (H: ", out[0],
        ", W: ", out[1], ") with ", input_size[1], " channels"));
  }
  return Shape{input_size[0], input_size[1], out[0], out[1]};
}

Specs InferForward(absl::Span<const Tensor> in, const Attrs& attrs,
                   const OpContext&) {
  const Tensor& self = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(self, kForward));
  if (self.ndim() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        kForward,
        ": non-empty 4D data tensor expected but got a tensor with "
        "sizes ",
        ShapeToString(self.shape())));
  }
  TD_ASSIGN_OR_RETURN(
      Shape shape, OutputShape(Ints(self.shape().begin(), self.shape().end()),
                               attrs, kForward));
  return std::vector<TensorSpec>{{self.dtype(), shape, self.device()}};
}

absl::Status Forward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::UpsampleBilinear2dAa(c[0].view(), out[0].view(), HowOf(attrs));
}

Specs InferBackward(absl::Span<const Tensor> in, const Attrs& attrs,
                    const OpContext&) {
  const Tensor& go = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(go, kBackward));
  const Ints& input_size = attrs.Ints("input_size");
  TD_ASSIGN_OR_RETURN(Shape want, OutputShape(input_size, attrs, kBackward));
  if (go.shape() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat(kBackward, ": expected grad_output of the output's shape ",
                     ShapeToString(want), ", got ", ShapeToString(go.shape())));
  }
  return std::vector<TensorSpec>{
      {go.dtype(), Shape(input_size.begin(), input_size.end()), go.device()}};
}

absl::Status Backward(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs& attrs, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> c, ContiguousAll(in, ctx));
  return cpu::UpsampleBilinear2dAaBackward(c[0].view(), out[0].view(),
                                           HowOf(attrs));
}

// The resampling attributes both rows share, from the forward's call.
std::map<std::string, AttrValue> Shared(const Attrs& a) {
  std::map<std::string, AttrValue> m = {
      {"output_size", a.Ints("output_size")},
      {"align_corners", a.Bool("align_corners")}};
  if (a.Has("scales_h")) m["scales_h"] = a.Float("scales_h");
  if (a.Has("scales_w")) m["scales_w"] = a.Float("scales_w");
  return m;
}

Grads ForwardGrad(GradCtx& g) {
  std::map<std::string, AttrValue> a = Shared(g.attrs());
  const Shape& s = g.in_shape(0);
  a["input_size"] = Ints(s.begin(), s.end());
  return {g.Op(kBackward, {g.grad()}, std::move(a))};
}

Grads BackwardGrad(GradCtx& g) {
  return {g.Op(kForward, {g.grad()}, Shared(g.attrs()))};
}

std::vector<AttrSpec> ResampleAttrs(bool backward) {
  std::vector<AttrSpec> a = {Required("output_size", AttrType::kInts)};
  if (backward) a.push_back(Required("input_size", AttrType::kInts));
  a.push_back(Optional("align_corners", AttrType::kBool, false));
  a.push_back(Optional("scales_h", AttrType::kFloat, std::monostate{}));
  a.push_back(Optional("scales_w", AttrType::kFloat, std::monostate{}));
  return a;
}

}  // namespace

std::vector<GradRow> UpsampleAaGrads() {
  return {{kForward, {}, {}, ForwardGrad}, {kBackward, {}, {}, BackwardGrad}};
}

std::vector<OpDef> UpsampleAaOps() {
  std::vector<OpDef> ops;
  OpDef fwd = MakeOp(
      kForward, 1, 1, ResampleAttrs(false),
      "F.interpolate(mode='bilinear', antialias=True)'s op: self [N, C, H, W] "
      "-> [N, C, *output_size], each output pixel a triangle-filtered "
      "average over max(scale, 1) input pixels either side (PIL's filter).");
  fwd.infer = InferForward;
  fwd.cpu = Forward;
  fwd.examples = {Example({{2, 3, 8, 10}}, {{"output_size", Ints{3, 4}}}),
                  Example({{1, 2, 4, 5}}, {{"output_size", Ints{7, 5}},
                                           {"align_corners", true}})};
  ops.push_back(std::move(fwd));
  OpDef bwd = MakeOp(kBackward, 1, 1, ResampleAttrs(true),
                     "(grad_output [N, C, *output_size]) -> the gradient of "
                     "_upsample_bilinear2d_aa w.r.t. its input of input_size.");
  bwd.infer = InferBackward;
  bwd.cpu = Backward;
  bwd.examples = {Example({{2, 3, 3, 4}}, {{"output_size", Ints{3, 4}},
                                           {"input_size", Ints{2, 3, 8, 10}}})};
  ops.push_back(std::move(bwd));
  return ops;
}

}  // namespace tensord
