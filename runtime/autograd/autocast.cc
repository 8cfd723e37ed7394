#include "runtime/autograd/autocast.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/autograd/recorder.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {

// Note [Autocast]: the policy is PyTorch's for CUDA (the op lists of
// ATen/autocast_mode.h), by the daemon's op names; ops missing from the
// table are simply not there yet. Softmax, reductions and cumulative ops,
// which PyTorch runs with dtype=float32, cast their input to float32 here:
// the same result in the same dtype. An op listed nowhere runs as called. A
// client-side twin exists for the PyTorch device
// (client/python/tensord/torch/_autocast.py), whose output dtypes PyTorch's
// meta functions must know before the daemon runs anything.
namespace {

std::vector<AutocastPolicy> BuildPolicies() {
  const absl::flat_hash_map<std::string, AutocastPolicy> by_name = [] {
    absl::flat_hash_map<std::string, AutocastPolicy> m;
    for (const char* name : {"conv1d",      "conv2d",
                             "conv3d",      "conv_transpose2d",
                             "convolution", "prelu",
                             "addmm",       "addmv",
                             "addr",        "matmul",
                             "einsum",      "mm",
                             "mv",          "linear",
                             "addbmm",      "baddbmm",
                             "bmm",         "lstm_cell",
                             "gru_cell",    "scaled_dot_product_attention"}) {
      m[name] = AutocastPolicy::kLow;
    }
    for (const char* name : {"acos",
                             "asin",
                             "cosh",
                             "erfinv",
                             "exp",
                             "expm1",
                             "log",
                             "log10",
                             "log2",
                             "log1p",
                             "reciprocal",
                             "rsqrt",
                             "sinh",
                             "tan",
                             "pow",
                             "softplus",
                             "layer_norm",
                             "rms_norm",
                             "group_norm",
                             "native_group_norm",
                             "norm",
                             "cosine_similarity",
                             "nll_loss",
                             "cross_entropy",
                             "kl_div",
                             "l1_loss",
                             "smooth_l1_loss",
                             "huber_loss",
                             "mse_loss",
                             "binary_cross_entropy_with_logits",
                             "dist",
                             "cdist",
                             "logsumexp",
                             "softmax",
                             "log_softmax",
                             "prod",
                             "cumprod",
                             "cumsum",
                             "sum"}) {
      m[name] = AutocastPolicy::kFloat32;
    }
    for (const char* name : {"addcdiv", "addcmul", "atan2", "cross", "dot",
                             "vdot", "index_put", "scatter_add"}) {
      m[name] = AutocastPolicy::kPromote;
    }
    return m;
  }();
  std::vector<AutocastPolicy> policies;
  for (const OpDef& op : OpTable()) {
    auto it = by_name.find(op.name);
    policies.push_back(it == by_name.end() ? AutocastPolicy::kAsCalled
                                           : it->second);
  }
  return policies;
}

bool Eligible(const Tensor& t) {
  return IsFloating(t.dtype()) && t.dtype() != DType::kFloat64;
}

}  // namespace

AutocastPolicy AutocastPolicyOf(size_t op_id) {
  static const std::vector<AutocastPolicy>* const policies =
      new std::vector<AutocastPolicy>(BuildPolicies());
  return op_id < policies->size() ? (*policies)[op_id]
                                  : AutocastPolicy::kAsCalled;
}

absl::Status AutocastInputs(AutocastPolicy policy, DType low,
                            absl::InlinedVector<Tensor, 4>* inputs,
                            const OpContext& ctx) {
  DType target = low;
  switch (policy) {
    case AutocastPolicy::kAsCalled:
      return absl::OkStatus();
    case AutocastPolicy::kLow:
      break;
    case AutocastPolicy::kFloat32:
      target = DType::kFloat32;
      break;
    case AutocastPolicy::kPromote: {
      bool any = false;
      for (const Tensor& t : *inputs) {
        if (!Eligible(t)) continue;
        target = any ? PromoteTypes(target, t.dtype()) : t.dtype();
        any = true;
      }
      if (!any) return absl::OkStatus();
      break;
    }
  }
  static const OpDef* const to = FindOp("to");
  for (Tensor& t : *inputs) {
    if (!Eligible(t) || t.dtype() == target) continue;
    Attrs built;
    auto attrs = CallAttrs(*to, {{"dtype", target}}, &built);
    if (!attrs.ok()) return attrs.status();
    auto cast = RunRecorded(*to, {t}, **attrs, ctx);
    if (!cast.ok()) return cast.status();
    t = std::move((*cast)[0]);
  }
  return absl::OkStatus();
}

}  // namespace tensord
