// batch_norm and layer_norm, composed of reduction and pointwise rows;
// batch_norm's training step is the fused native_batch_norm row
// (batch_norm_ops.cc) plus the [C]-sized running statistics, and layer_norm
// the fused native_layer_norm row (layer_norm_ops.cc), on every device.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/core/status_macros.h"
#include "runtime/device.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_helpers.h"

namespace tensord {

using Outs = absl::StatusOr<std::vector<Tensor>>;
using I = std::vector<int64_t>;

namespace {

// layer_norm: (x - mean) * rsqrt(var + eps) * weight + bias, stats broadcast as
// `shape`.
absl::StatusOr<Tensor> Normalize(const Tensor& x, Tensor mean, Tensor var,
                                 const Tensor* weight, const Tensor* bias,
                                 const I& shape, const I& wshape, double eps,
                                 const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(mean, Call1("reshape", {mean}, {{"shape", shape}}, ctx));
  TD_ASSIGN_OR_RETURN(var, Call1("reshape", {var}, {{"shape", shape}}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor e, Scalar(eps, var.dtype(), var.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor d, Call1("add", {var, e}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor inv, Call1("rsqrt", {d}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor y, Call1("sub", {x, mean}, {}, ctx));
  TD_ASSIGN_OR_RETURN(y, Call1("mul", {y, inv}, {}, ctx));
  if (weight != nullptr) {
    TD_ASSIGN_OR_RETURN(Tensor w,
                        Call1("reshape", {*weight}, {{"shape", wshape}}, ctx));
    TD_ASSIGN_OR_RETURN(y, Call1("mul", {y, w}, {}, ctx));
  }
  if (bias != nullptr) {
    TD_ASSIGN_OR_RETURN(Tensor b,
                        Call1("reshape", {*bias}, {{"shape", wshape}}, ctx));
    TD_ASSIGN_OR_RETURN(y, Call1("add", {y, b}, {}, ctx));
  }
  return y;
}

// batch_norm: x * scale + shift with scale = rsqrt(var + eps) * weight and
// shift = bias - mean * scale, the statistics broadcast as `shape` (PyTorch's
// CPU kernel computes the same alpha/beta form): two passes over x instead of
// four, and a backward of the same size; the per-channel work is on [C]-sized
// tensors.
absl::StatusOr<Tensor> NormalizeChannels(const Tensor& x, Tensor mean,
                                         Tensor var, const Tensor* weight,
                                         const Tensor* bias, const I& shape,
                                         double eps, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor e, Scalar(eps, var.dtype(), var.device(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor d, Call1("add", {var, e}, {}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor scale, Call1("rsqrt", {d}, {}, ctx));
  TD_ASSIGN_OR_RETURN(scale,
                      Call1("reshape", {scale}, {{"shape", shape}}, ctx));
  if (weight != nullptr) {
    TD_ASSIGN_OR_RETURN(Tensor w,
                        Call1("reshape", {*weight}, {{"shape", shape}}, ctx));
    TD_ASSIGN_OR_RETURN(scale, Call1("mul", {scale, w}, {}, ctx));
  }
  TD_ASSIGN_OR_RETURN(mean, Call1("reshape", {mean}, {{"shape", shape}}, ctx));
  TD_ASSIGN_OR_RETURN(Tensor shift, Call1("mul", {mean, scale}, {}, ctx));
  TD_ASSIGN_OR_RETURN(shift, Call1("neg", {shift}, {}, ctx));
  if (bias != nullptr) {
    TD_ASSIGN_OR_RETURN(Tensor b,
                        Call1("reshape", {*bias}, {{"shape", shape}}, ctx));
    TD_ASSIGN_OR_RETURN(shift, Call1("add", {shift, b}, {}, ctx));
  }
  TD_ASSIGN_OR_RETURN(Tensor y, Call1("mul", {x, scale}, {}, ctx));
  return Call1("add", {y, shift}, {}, ctx);
}

absl::Status CheckChannels(const Tensor& t, int64_t c, const char* what) {
  if (t.ndim() == 1 && t.shape()[0] == c) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("batch_norm: ", what, " should have shape [", c, "], got ",
                   ShapeToString(t.shape())));
}

}  // namespace

Outs BatchNorm(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx) {
  const Tensor& x = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(x, "batch_norm"));
  if (x.ndim() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_norm: expected an input with at least 2 dims, got ",
                     ShapeToString(x.shape())));
  }
  // A module's own check (BatchNorm2d: 4D), made here so that the client
  // need not wait for the input's shape.
  const I& ranks = attrs.Ints("ranks");
  if (!ranks.empty() &&
      std::find(ranks.begin(), ranks.end(), x.ndim()) == ranks.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", absl::StrJoin(ranks, "D or "),
                     "D input (got ", x.ndim(), "D input)"));
  }
  if (in.size() == 2) {
    return absl::InvalidArgumentError(
        "batch_norm takes running_mean and running_var together");
  }
  const int64_t c = x.shape()[1];
  const char* names[] = {"", "running_mean", "running_var", "weight", "bias"};
  for (size_t i = 1; i < in.size(); ++i)
    TD_RETURN_IF_ERROR(CheckChannels(in[i], c, names[i]));
  const bool training = attrs.Bool("training") || in.size() < 3;
  if (!training) {  // the running statistics normalize
    I shape{1, c};
    for (int d = 2; d < x.ndim(); ++d) shape.push_back(1);
    TD_ASSIGN_OR_RETURN(
        Tensor y,
        NormalizeChannels(x, in[1], in[2], in.size() > 3 ? &in[3] : nullptr,
                          in.size() > 4 ? &in[4] : nullptr, shape,
                          attrs.Float("eps"), ctx));
    return std::vector<Tensor>{y};
  }
  const int64_t n = x.numel() / std::max<int64_t>(c, 1);
  if (n <= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Expected more than 1 value per channel when training, "
                     "got input size ",
                     ShapeToString(x.shape())));
  }
  // One fused kernel forward and one backward (batch_norm_ops.cc).
  std::vector<Tensor> args{x};
  for (size_t i = 3; i < in.size(); ++i) args.push_back(in[i]);
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> outs,
                      CallOp("native_batch_norm", std::move(args),
                             {{"eps", attrs.Float("eps")}}, ctx));
  const Tensor &mean = outs[1], &var = outs[2];
  if (in.size() >= 3) {
    const double m = attrs.Float("momentum");
    // The unbiased variance from the biased one: a [C] product, not
    // another reduction over x.
    TD_ASSIGN_OR_RETURN(Tensor bessel, Scalar(static_cast<double>(n) /
                                                  static_cast<double>(n - 1),
                                              var.dtype(), var.device(), ctx));
    TD_ASSIGN_OR_RETURN(Tensor unbiased, Call1("mul", {var, bessel}, {}, ctx));
    for (auto [stat, run] :
         {std::pair{mean, in[1]}, std::pair{unbiased, in[2]}}) {
      TD_ASSIGN_OR_RETURN(Tensor keep,
                          Scalar(1 - m, run.dtype(), run.device(), ctx));
      TD_ASSIGN_OR_RETURN(Tensor take,
                          Scalar(m, run.dtype(), run.device(), ctx));
      TD_ASSIGN_OR_RETURN(Tensor a, Call1("mul", {run, keep}, {}, ctx));
      // The running statistics carry no history (as PyTorch's).
      TD_ASSIGN_OR_RETURN(Tensor fixed, Call1("detach", {stat}, {}, ctx));
      TD_ASSIGN_OR_RETURN(Tensor b, Call1("mul", {fixed, take}, {}, ctx));
      TD_ASSIGN_OR_RETURN(a, Call1("add", {a, b}, {}, ctx));
      TD_RETURN_IF_ERROR(Call1("copy_", {run, a}, {}, ctx).status());
    }
  }
  return std::vector<Tensor>{outs[0]};
}

Outs LayerNorm(absl::Span<const Tensor> in, const Attrs& attrs,
               const OpContext& ctx) {
  const Tensor& x = in[0];
  TD_RETURN_IF_ERROR(RequireFloating(x, "layer_norm"));
  const I& ns = attrs.Ints("normalized_shape");
  const int k = static_cast<int>(ns.size());
  bool ok = k >= 1 && k <= x.ndim();
  for (int i = 0; ok && i < k; ++i) ok = x.shape()[x.ndim() - k + i] == ns[i];
  for (size_t i = 1; ok && i < in.size(); ++i)
    ok = I(in[i].shape().begin(), in[i].shape().end()) == ns;
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer_norm: input ", ShapeToString(x.shape()),
                     " (and weight/bias) must end with "
                     "normalized_shape ",
                     ShapeToString(ns)));
  }
  bool same_dtype = true;
  for (const Tensor& t : in) same_dtype &= t.dtype() == x.dtype();
  if (same_dtype) {
    // One fused kernel forward and one backward (layer_norm_ops.cc).
    TD_ASSIGN_OR_RETURN(
        std::vector<Tensor> outs,
        CallOp("native_layer_norm", std::vector<Tensor>(in.begin(), in.end()),
               {{"normalized_shape", ns}, {"eps", attrs.Float("eps")}}, ctx));
    return std::vector<Tensor>{outs[0]};
  }
  I dims, shape(x.shape().begin(), x.shape().end());
  for (int d = x.ndim() - k; d < x.ndim(); ++d) dims.push_back(d), shape[d] = 1;
  TD_ASSIGN_OR_RETURN(Tensor mean, Call1("mean", {x}, {{"dim", dims}}, ctx));
  TD_ASSIGN_OR_RETURN(
      Tensor var, Call1("var", {x}, {{"dim", dims}, {"unbiased", false}}, ctx));
  I wshape(x.ndim(), 1);
  for (int i = 0; i < k; ++i) wshape[x.ndim() - k + i] = ns[i];
  TD_ASSIGN_OR_RETURN(Tensor y,
                      Normalize(x, mean, var, in.size() > 1 ? &in[1] : nullptr,
                                in.size() > 2 ? &in[2] : nullptr, shape, wshape,
                                attrs.Float("eps"), ctx));
  return std::vector<Tensor>{y};
}

}  // namespace tensord
