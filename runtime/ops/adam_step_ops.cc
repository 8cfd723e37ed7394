// adam_step: torch.optim.Adam's (and AdamW's) single-tensor algorithm over
// all parameters in one command, step for step, in the parameters' dtype
// (fused loops on the CPU, fused kernels on CUDA, composed ops otherwise:
// optim_step.h), with the step counts kept by the daemon (Note [Adam step
// counts]). Updates params and moments in place and bumps their versions; no
// outputs, not differentiable.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"
#include "runtime/ops/optim_step.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/optim.h"
#endif

namespace tensord {
namespace {

using optim_step::CheckGroups;
using optim_step::Composed;
using optim_step::Fast;
using optim_step::OnCpu;
using optim_step::OnDeviceStream;
using optim_step::WithGrads;
using Outs = absl::StatusOr<std::vector<Tensor>>;

struct AdamConfig {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;
  bool decoupled, maximize;
};

template <typename T>
void AdamKernel(const AdamConfig& c, T* p, const T* g, T* m, T* v, int64_t n) {
  const T w1 = 1 - c.beta1, b2 = c.beta2, w2 = 1 - c.beta2;
  const T wd = c.weight_decay, decay = 1 - c.lr * c.weight_decay;
  const double bc1 = 1 - std::pow(c.beta1, static_cast<double>(c.step));
  const double bc2 = 1 - std::pow(c.beta2, static_cast<double>(c.step));
  const T step_size = c.lr / bc1, bc2_sqrt = std::sqrt(bc2), eps = c.eps;
  for (int64_t i = 0; i < n; ++i) {
    T d = c.maximize ? -g[i] : g[i];
    if (c.weight_decay != 0) {
      if (c.decoupled) {
        p[i] = p[i] * decay;
      } else {
        d = d + wd * p[i];
      }
    }
    m[i] = m[i] + w1 * (d - m[i]);  // lerp_(grad, 1 - beta1)
    v[i] = v[i] * b2 + w2 * d * d;
    const T denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    p[i] = p[i] + -step_size * (m[i] / denom);
  }
}

absl::Status AdamComposed(const AdamConfig& c, absl::Span<const Tensor> in,
                          int64_t n, int64_t i, const OpContext& ctx) {
  Composed op{ctx};
  Tensor p = in[i], d = in[n + i], m = in[2 * n + i], v = in[3 * n + i];
  if (c.maximize) {
    TD_ASSIGN_OR_RETURN(d, op("neg", {d}));
  }
  if (c.weight_decay != 0) {
    if (c.decoupled) {
      TD_ASSIGN_OR_RETURN(Tensor k, op.Num(1 - c.lr * c.weight_decay, p));
      TD_RETURN_IF_ERROR(op.InPlace("mul_", p, k));
    } else {
      TD_ASSIGN_OR_RETURN(d, op("add", {d, p}, {{"alpha", c.weight_decay}}));
    }
  }
  TD_ASSIGN_OR_RETURN(Tensor delta, op("sub", {d, m}));
  TD_RETURN_IF_ERROR(op.InPlace("add_", m, delta, 1 - c.beta1));
  TD_ASSIGN_OR_RETURN(Tensor b2, op.Num(c.beta2, v));
  TD_RETURN_IF_ERROR(op.InPlace("mul_", v, b2));
  TD_ASSIGN_OR_RETURN(Tensor sq, op("mul", {d, d}));
  TD_RETURN_IF_ERROR(op.InPlace("add_", v, sq, 1 - c.beta2));
  const double bc1 = 1 - std::pow(c.beta1, static_cast<double>(c.step));
  const double bc2 = 1 - std::pow(c.beta2, static_cast<double>(c.step));
  TD_ASSIGN_OR_RETURN(Tensor root, op("sqrt", {v}));
  TD_ASSIGN_OR_RETURN(Tensor s, op.Num(std::sqrt(bc2), v));
  TD_ASSIGN_OR_RETURN(Tensor denom, op("div", {root, s}));
  TD_ASSIGN_OR_RETURN(Tensor eps, op.Num(c.eps, v));
  TD_ASSIGN_OR_RETURN(denom, op("add", {denom, eps}));
  TD_ASSIGN_OR_RETURN(Tensor upd, op("div", {m, denom}));
  return op.InPlace("add_", p, upd, -c.lr / bc1);
}

// Note [Adam step counts]: a parameter's step count is torch.optim's
// state["step"], a one-element CPU tensor the client made (zeros) and passes
// every step. Only the daemon knows which parameters have a gradient (Note
// [Optimizer steps read .grad]), so only it can count their steps: the count
// of each parameter stepped goes up by one here, and the bias corrections
// use the new count. CPU, so reading it never waits for a device.
absl::StatusOr<std::vector<int64_t>> NextSteps(absl::Span<const Tensor> steps) {
  std::vector<int64_t> next;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Tensor& s = steps[i];
    const DType d = s.dtype();
    if (!OnCpu(s) || s.numel() != 1 ||
        (d != DType::kFloat32 && d != DType::kFloat64 && d != DType::kInt64)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "adam_step: step count ", i,
          " must be a one-element float32, "
          "float64 or int64 CPU tensor (torch's state['step']), got ",
          DTypeName(d), ShapeToString(s.shape()), " on ", s.device()->name()));
    }
    const double v =
        d == DType::kFloat32 ? *static_cast<float*>(s.data())
        : d == DType::kFloat64
            ? *static_cast<double*>(s.data())
            : static_cast<double>(*static_cast<int64_t*>(s.data()));
    if (!(v >= 0 && v < 9e15) || v != std::floor(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("adam_step: step count ", i, " is ", v,
                       "; it counts steps taken (0 before the first)"));
    }
    next.push_back(static_cast<int64_t>(v) + 1);
  }
  return next;
}

void StoreStep(const Tensor& s, int64_t v) {
  switch (s.dtype()) {
    case DType::kFloat32:
      *static_cast<float*>(s.data()) = static_cast<float>(v);
      break;
    case DType::kFloat64:
      *static_cast<double*>(s.data()) = static_cast<double>(v);
      break;
    default:
      *static_cast<int64_t*>(s.data()) = v;
  }
  s.storage()->BumpVersion();
}

Outs AdamStep(absl::Span<const Tensor> in, const Attrs& attrs,
              const OpContext& ctx) {
  const AdamConfig base{attrs.Float("lr"),
                        attrs.Float("beta1"),
                        attrs.Float("beta2"),
                        attrs.Float("eps"),
                        attrs.Float("weight_decay"),
                        0,
                        attrs.Bool("decoupled_weight_decay"),
                        attrs.Bool("maximize")};
  // params, grads, exp_avgs, exp_avg_sqs (like params), then step counts.
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> with_grads,
                      WithGrads("adam_step", in, attrs.Int("n"), 4));
  in = with_grads;
  const int64_t n = static_cast<int64_t>(in.size()) / 5;
  TD_RETURN_IF_ERROR(CheckGroups("adam_step", in.first(4 * n), n, 4));
  TD_ASSIGN_OR_RETURN(std::vector<int64_t> steps, NextSteps(in.subspan(4 * n)));
  auto config = [&](int64_t i) {
    AdamConfig c = base;
    c.step = steps[i];
    return c;
  };
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, 4)) {
      TD_RETURN_IF_ERROR(AdamComposed(config(i), in, n, i, ctx));
    }
  }
#if TENSORD_WITH_CUDA
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, 4) || OnCpu(in[i])) continue;
    const AdamConfig c = config(i);
    const cuda::AdamParams k{c.lr,           c.beta1, c.beta2,     c.eps,
                             c.weight_decay, c.step,  c.decoupled, c.maximize};
    TD_RETURN_IF_ERROR(OnDeviceStream(in, n, i, 4, ctx, [&](StreamHandle s) {
      return cuda::AdamStep(k, in[i].view(), in[n + i].view(),
                            in[2 * n + i].view(), in[3 * n + i].view(), s);
    }));
  }
#endif
  optim_step::ForEachCpuChunk(in, n, 4, [&](int64_t i, int64_t b, int64_t e) {
    const Tensor& p = in[i];
    if (p.dtype() == DType::kFloat64) {
      AdamKernel(config(i), static_cast<double*>(p.data()) + b,
                 static_cast<const double*>(in[n + i].data()) + b,
                 static_cast<double*>(in[2 * n + i].data()) + b,
                 static_cast<double*>(in[3 * n + i].data()) + b, e - b);
    } else {
      AdamKernel(config(i), static_cast<float*>(p.data()) + b,
                 static_cast<const float*>(in[n + i].data()) + b,
                 static_cast<float*>(in[2 * n + i].data()) + b,
                 static_cast<float*>(in[3 * n + i].data()) + b, e - b);
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    StoreStep(in[4 * n + i], steps[i]);
    if (!Fast(in, n, i, 4)) continue;
    in[i].storage()->BumpVersion();
    in[2 * n + i].storage()->BumpVersion();
    in[3 * n + i].storage()->BumpVersion();
  }
  return std::vector<Tensor>{};
}
}  // namespace

OpDef AdamStepOp() {
  OpDef adam = MakeOp(
      "adam_step", 4, -1,
      {Required("n", AttrType::kInt), Optional("lr", AttrType::kFloat, 1e-3),
       Optional("beta1", AttrType::kFloat, 0.9),
       Optional("beta2", AttrType::kFloat, 0.999),
       Optional("eps", AttrType::kFloat, 1e-8),
       Optional("weight_decay", AttrType::kFloat, 0.0),
       Optional("decoupled_weight_decay", AttrType::kBool, false),
       Optional("maximize", AttrType::kBool, false)},
      "torch.optim.Adam (AdamW with decoupled_weight_decay) step in place "
      "over params, exp_avgs, exp_avg_sqs and steps (n each; a step is a "
      "one-element CPU tensor counting the steps taken, bumped here); each "
      "param's gradient is its .grad, and params without one are skipped.");
  adam.composite = AdamStep;
  adam.num_outputs = 0;
  adam.differentiable = false;
  adam.examples = {Example(
      {{2, 3}, {2, 3}, {2, 3}, {}}, {{"n", int64_t{1}}},
      {DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kInt64})};
  return adam;
}

}  // namespace tensord
