// In-place ops: write into input 0's memory and return a view aliasing it.
//
// Note [In-place ops]: each row runs its out-of-place twin through RunOp
// (so validation and kernels are shared), checks that the result fits
// input 0 (same shape after broadcasting; a dtype PyTorch may cast into
// it: no float into an integer tensor, nothing but bool into bool), then
// copies it in and bumps the storage's version counter, which autograd
// reads to detect modified saved tensors.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Views = absl::StatusOr<std::vector<Tensor>>;

absl::Status CheckWritable(const Tensor& t) {
  for (int d = 0; d < t.ndim(); ++d) {
    if (t.strides()[d] == 0 && t.shape()[d] > 1) {
      return absl::InvalidArgumentError(
          "unsupported operation: more than one element of the written-to "
          "tensor refers to a single memory location. Please clone() the "
          "tensor before performing the operation.");
    }
  }
  return absl::OkStatus();
}

bool CanCast(DType from, DType to) {
  if (IsFloating(from) && !IsFloating(to)) return false;
  if (from != DType::kBool && to == DType::kBool) return false;
  return true;
}

absl::Status CheckFits(const Tensor& self, const Tensor& result) {
  if (!CanCast(result.dtype(), self.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result type ", DTypeName(result.dtype()),
        " can't be cast to the desired output type ", DTypeName(self.dtype())));
  }
  if (result.shape() != self.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output with shape ", ShapeToString(self.shape()),
        " doesn't match the broadcast shape ", ShapeToString(result.shape())));
  }
  return absl::OkStatus();
}

constexpr const char* kTwins[] = {"add", "sub", "mul", "div", "clamp", "relu"};

// Note [In-place arithmetic]: add_/sub_/mul_/div_ of a contiguous CPU float
// tensor by a same-dtype operand of its shape that does not overlap it (or is
// it, element for element) write through in one pass: the twin's kernel with
// self as its output, no temporary and no copy back (AccumulateGrad's .grad
// += g is one). Elementwise, so reading and writing self at one index is
// safe; anything else takes the twin + copy path.
constexpr cpu::BinaryOp kTwinOps[] = {cpu::BinaryOp::kAdd, cpu::BinaryOp::kSub,
                                      cpu::BinaryOp::kMul, cpu::BinaryOp::kDiv};

bool WritesThrough(int twin, absl::Span<const Tensor> in, const Attrs& attrs) {
  if (twin > 3 || in.size() != 2) return false;
  const Tensor &self = in[0], &other = in[1];
  const DType t = self.dtype();
  if ((t != DType::kFloat32 && t != DType::kFloat64) || other.dtype() != t ||
      self.device()->kind() != DeviceKind::kCpu ||
      other.device() != self.device() || !self.is_contiguous() ||
      other.shape() != self.shape()) {
    return false;
  }
  if (twin == 3 && !attrs.String("rounding_mode").empty()) return false;
  return other.storage() != self.storage() ||
         (other.data() == self.data() && other.is_contiguous());
}

template <int kTwin>
Views InPlace(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  const Tensor& self = in[0];
  TD_RETURN_IF_ERROR(CheckWritable(self));
  if (WritesThrough(kTwin, in, attrs)) {
    const double alpha = kTwin <= 1 ? attrs.Float("alpha") : 1.0;
    TD_RETURN_IF_ERROR(cpu::Binary(kTwinOps[kTwin < 4 ? kTwin : 0],
                                   self.view(), in[1].view(), alpha,
                                   self.view()));
    self.storage()->BumpVersion();
    return Views(std::vector<Tensor>{self});
  }
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> result,
                      RunOp(*FindOp(kTwins[kTwin]), in, attrs, ctx));
  TD_RETURN_IF_ERROR(CheckFits(self, result[0]));
  TD_RETURN_IF_ERROR(CopyInto(self, result[0], ctx));
  return Views(std::vector<Tensor>{self});
}

Views Zero(absl::Span<const Tensor> in, const Attrs&, const OpContext& ctx) {
  TD_RETURN_IF_ERROR(CheckWritable(in[0]));
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(in[0].device(), ctx));
  TD_RETURN_IF_ERROR(
      FillOnDevice(in[0].device(), in[0].view(), 0.0, dctx.alloc.stream));
  in[0].storage()->BumpVersion();
  return Views(std::vector<Tensor>{in[0]});
}

// fill_(value) and copy_(src): src broadcasts to self and converts to its
// dtype (any dtype may be copied into any other, as in PyTorch).
Views CopyFrom(absl::Span<const Tensor> in, const Attrs&,
               const OpContext& ctx) {
  TD_RETURN_IF_ERROR(CheckWritable(in[0]));
  TD_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(in[0].shape(), in[1].shape()));
  if (s != in[0].shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("source of shape ", ShapeToString(in[1].shape()),
                     " does not broadcast to destination shape ",
                     ShapeToString(in[0].shape())));
  }
  TD_RETURN_IF_ERROR(CopyInto(in[0], in[1], ctx));
  return Views(std::vector<Tensor>{in[0]});
}

Views Fill(absl::Span<const Tensor> in, const Attrs& attrs,
           const OpContext& ctx) {
  if (in[1].ndim() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fill_ only supports 0-dimension value tensor but got tensor with ",
        in[1].ndim(), " dimensions."));
  }
  return CopyFrom(in, attrs, ctx);
}

OpDef InPlaceRow(const std::string& twin, ViewFn fn) {
  const OpDef* base = FindOpInFamilies(twin);
  OpDef def = MakeOp(twin + "_", base->min_inputs, base->max_inputs,
                     base->attrs, "In-place " + twin + ": " + base->doc);
  def.composite = fn;
  def.inplace = true;
  def.examples = base->examples;
  if (twin == "div") {  // true division into a float tensor only
    def.examples = {Example({{2, 3}, {3}})};
  }
  return def;
}

}  // namespace

std::vector<OpDef> InPlaceOps() {
  std::vector<OpDef> ops;
  ops.push_back(InPlaceRow("add", InPlace<0>));
  ops.push_back(InPlaceRow("sub", InPlace<1>));
  ops.push_back(InPlaceRow("mul", InPlace<2>));
  ops.push_back(InPlaceRow("div", InPlace<3>));
  ops.push_back(InPlaceRow("clamp", InPlace<4>));
  ops.push_back(InPlaceRow("relu", InPlace<5>));
  OpDef zero = MakeOp("zero_", 1, 1, {}, "Fills input with zeros in place.");
  zero.composite = Zero;
  zero.inplace = true;
  ops.push_back(std::move(zero));
  OpDef fill =
      MakeOp("fill_", 2, 2, {}, "Fills input with a 0-d value in place.");
  fill.composite = Fill;
  fill.inplace = true;
  fill.examples = {Example({{2, 3}, {}})};
  ops.push_back(std::move(fill));
  OpDef copy = MakeOp("copy_", 2, 2, {},
                      "Copies src (broadcast, converted) into input in place.");
  copy.composite = CopyFrom;
  copy.inplace = true;
  copy.examples = {
      Example({{2, 3}, {3}}, {}, {DType::kFloat32, DType::kInt64})};
  ops.push_back(std::move(copy));
  return ops;
}

}  // namespace tensord
