// Autograd support rows: detach, and the fused optimizer steps sgd_step and
// adam_step (one command per step over all parameters; torch.optim's
// single-tensor algorithms, step for step, in the parameters' dtype; fused
// loops on the CPU, fused kernels on CUDA, composed ops otherwise).
//
// The steps update params (and their state buffers) in place and bump their
// versions; they have no outputs and are not differentiable. State lives in
// daemon tensors the client created (zeros_like) and passes every step.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/optim.h"
#endif

namespace tensord {
namespace {

using Outs = absl::StatusOr<std::vector<Tensor>>;

Outs Detach(absl::Span<const Tensor> in, const Attrs&, const OpContext&) {
  const Tensor& t = in[0];
  return std::vector<Tensor>{t.AsStrided(t.shape(), t.strides(), t.offset())};
}

// Checks the input list: `groups` lists of n tensors, each like params[i].
absl::Status CheckGroups(const char* op, absl::Span<const Tensor> in, int64_t n,
                         int groups) {
  // n is compared by division: n * groups overflows for a hostile n.
  if (n < 0 || static_cast<int64_t>(in.size()) % groups != 0 ||
      static_cast<int64_t>(in.size()) / groups != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " expects ", groups, " lists of n=", n,
                     " tensors each, got ", in.size(), " inputs"));
  }
  for (int64_t i = 0; i < n; ++i) {
    const Tensor& p = in[i];
    TD_RETURN_IF_ERROR(RequireFloating(p, op));
    for (int g = 1; g < groups; ++g) {
      const Tensor& t = in[g * n + i];
      if (t.shape() != p.shape() || t.dtype() != p.dtype() ||
          t.device() != p.device()) {
        return absl::InvalidArgumentError(absl::StrCat(
            op, ": tensor ", g * n + i, " (", DTypeName(t.dtype()),
            ShapeToString(t.shape()), ") must be like parameter ", i, " (",
            DTypeName(p.dtype()), ShapeToString(p.shape()), ")"));
      }
    }
  }
  return absl::OkStatus();
}

// The fused paths take contiguous float32/float64 tensors: loops split over
// the pool on the CPU, one kernel per parameter on CUDA (kernels/cuda/
// optim.h, in CUDA builds); the others run the same algorithm as ops (any
// dtype, layout or device).
bool Fast(absl::Span<const Tensor> in, int64_t n, int64_t i, int groups) {
  const Tensor& p = in[i];
#if TENSORD_WITH_CUDA
  const bool fused_device = true;  // every device kind there is
#else
  const bool fused_device = p.device()->kind() == DeviceKind::kCpu;
#endif
  if (!fused_device ||
      (p.dtype() != DType::kFloat32 && p.dtype() != DType::kFloat64)) {
    return false;
  }
  for (int g = 0; g < groups; ++g) {
    if (!in[g * n + i].is_contiguous()) return false;
  }
  return true;
}

// A small vocabulary over CallOp for the composed path.
struct Composed {
  const OpContext& ctx;
  absl::StatusOr<Tensor> Num(double v, const Tensor& like) const {
    return Scalar(v, DType::kFloat64, like.device(), ctx);
  }
  absl::StatusOr<Tensor> operator()(const char* op, std::vector<Tensor> in,
                                    std::map<std::string, AttrValue> a = {}) {
    return Call1(op, std::move(in), std::move(a), ctx);
  }
  // t (op)= v * alpha, in place.
  absl::Status InPlace(const char* op, const Tensor& t, const Tensor& v,
                       double alpha = 1) {
    std::map<std::string, AttrValue> a;
    if (alpha != 1) a["alpha"] = alpha;
    return Call1(op, {t, v}, std::move(a), ctx).status();
  }
};

bool OnCpu(const Tensor& t) { return t.device()->kind() == DeviceKind::kCpu; }

// The CUDA fused step of parameter i: on the session's stream of its
// device, its tensors' blocks recorded there (Note [Cross-stream inputs]).
template <typename Launch>
absl::Status OnDeviceStream(absl::Span<const Tensor> in, int64_t n, int64_t i,
                            int groups, const OpContext& ctx, Launch launch) {
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(in[i].device(), ctx));
  std::vector<Tensor> used;
  for (int g = 0; g < groups; ++g) used.push_back(in[g * n + i]);
  TD_RETURN_IF_ERROR(RecordCrossStreamUses(used, dctx.alloc.stream));
  return launch(dctx.alloc.stream);
}

struct SgdConfig {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize, first_step;
};

template <typename T>
void SgdKernel(const SgdConfig& c, T* p, const T* g, T* buf, int64_t n) {
  const T lr = c.lr, mom = c.momentum, wd = c.weight_decay;
  const T keep = 1 - c.dampening;
  for (int64_t i = 0; i < n; ++i) {
    T d = c.maximize ? -g[i] : g[i];
    if (c.weight_decay != 0) d = d + wd * p[i];
    if (c.momentum != 0) {
      buf[i] = c.first_step ? d : buf[i] * mom + keep * d;
      d = c.nesterov ? d + mom * buf[i] : buf[i];
    }
    p[i] = p[i] + -lr * d;
  }
}

absl::Status SgdComposed(const SgdConfig& c, absl::Span<const Tensor> in,
                         int64_t n, int64_t i, const OpContext& ctx) {
  Composed op{ctx};
  Tensor p = in[i], d = in[n + i];
  if (c.maximize) {
    TD_ASSIGN_OR_RETURN(d, op("neg", {d}));
  }
  if (c.weight_decay != 0) {
    TD_ASSIGN_OR_RETURN(d, op("add", {d, p}, {{"alpha", c.weight_decay}}));
  }
  if (c.momentum != 0) {
    const Tensor& buf = in[2 * n + i];
    if (c.first_step) {
      TD_RETURN_IF_ERROR(op.InPlace("copy_", buf, d));
    } else {
      TD_ASSIGN_OR_RETURN(Tensor m, op.Num(c.momentum, buf));
      TD_RETURN_IF_ERROR(op.InPlace("mul_", buf, m));
      TD_RETURN_IF_ERROR(op.InPlace("add_", buf, d, 1 - c.dampening));
    }
    if (c.nesterov) {
      TD_ASSIGN_OR_RETURN(d, op("add", {d, buf}, {{"alpha", c.momentum}}));
    } else {
      d = buf;
    }
  }
  return op.InPlace("add_", p, d, -c.lr);
}

// Note [Optimizer steps read .grad]: a client that had to learn which
// parameters have a gradient before sending a step waited a round trip per
// training step (the GetGrad Acks). So the steps take no gradients: each
// parameter's gradient is its .grad here, read when the step runs (in stream
// order, after the backward that wrote it), and parameters without one are
// left out, as torch.optim skips them; their state is not touched. Inputs
// are `given` lists of n (params first, then state); returns them with the
// gradients inserted as list 1, for the parameters that have one.
absl::StatusOr<std::vector<Tensor>> WithGrads(const char* op,
                                              absl::Span<const Tensor> in,
                                              int64_t n, int given) {
  if (n < 0 || static_cast<int64_t>(in.size()) % given != 0 ||
      static_cast<int64_t>(in.size()) / given != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, " expects ", given, " lists of n=", n,
                     " tensors each, got ", in.size(), " inputs"));
  }
  std::vector<int64_t> have;
  for (int64_t i = 0; i < n; ++i) {
    const AutogradMeta* meta = in[i].autograd();
    if (meta != nullptr && meta->grad.defined()) have.push_back(i);
  }
  std::vector<Tensor> out;
  out.reserve(have.size() * (given + 1));
  for (int64_t i : have) out.push_back(in[i]);
  for (int64_t i : have) out.push_back(in[i].autograd()->grad);
  for (int g = 1; g < given; ++g) {
    for (int64_t i : have) out.push_back(in[g * n + i]);
  }
  return out;
}

Outs SgdStep(absl::Span<const Tensor> in, const Attrs& attrs,
             const OpContext& ctx) {
  const SgdConfig c{attrs.Float("lr"),        attrs.Float("momentum"),
                    attrs.Float("dampening"), attrs.Float("weight_decay"),
                    attrs.Bool("nesterov"),   attrs.Bool("maximize"),
                    attrs.Bool("first_step")};
  if (c.nesterov && (c.momentum <= 0 || c.dampening != 0)) {
    return absl::InvalidArgumentError(
        "Nesterov momentum requires a momentum and zero dampening");
  }
  const int groups = c.momentum != 0 ? 3 : 2;
  TD_ASSIGN_OR_RETURN(std::vector<Tensor> with_grads,
                      WithGrads("sgd_step", in, attrs.Int("n"), groups - 1));
  in = with_grads;
  const int64_t n = static_cast<int64_t>(in.size()) / groups;
  TD_RETURN_IF_ERROR(CheckGroups("sgd_step", in, n, groups));
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, groups)) {
      TD_RETURN_IF_ERROR(SgdComposed(c, in, n, i, ctx));
    }
  }
#if TENSORD_WITH_CUDA
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, groups) || OnCpu(in[i])) continue;
    const cuda::SgdParams k{c.lr,       c.momentum, c.dampening, c.weight_decay,
                            c.nesterov, c.maximize, c.first_step};
    const Tensor& state = in[(c.momentum != 0 ? 2 : 0) * n + i];
    TD_RETURN_IF_ERROR(
        OnDeviceStream(in, n, i, groups, ctx, [&](StreamHandle stream) {
          return cuda::SgdStep(k, in[i].view(), in[n + i].view(), state.view(),
                               stream);
        }));
  }
#endif
  cpu::ParallelFor(n, 1 << 12, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Tensor& p = in[i];
      if (!Fast(in, n, i, groups) || !OnCpu(p)) continue;
      void* buf = c.momentum != 0 ? in[2 * n + i].data() : nullptr;
      if (p.dtype() == DType::kFloat64) {
        SgdKernel(c, static_cast<double*>(p.data()),
                  static_cast<const double*>(in[n + i].data()),
                  static_cast<double*>(buf), p.numel());
      } else {
        SgdKernel(c, static_cast<float*>(p.data()),
                  static_cast<const float*>(in[n + i].data()),
                  static_cast<float*>(buf), p.numel());
      }
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, groups)) continue;  // bumped by the in-place ops
    in[i].storage()->BumpVersion();
    if (c.momentum != 0) in[2 * n + i].storage()->BumpVersion();
  }
  return std::vector<Tensor>{};
}

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
  cpu::ParallelFor(n, 1 << 12, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Tensor& p = in[i];
      if (!Fast(in, n, i, 4) || !OnCpu(p)) continue;
      if (p.dtype() == DType::kFloat64) {
        AdamKernel(config(i), static_cast<double*>(p.data()),
                   static_cast<const double*>(in[n + i].data()),
                   static_cast<double*>(in[2 * n + i].data()),
                   static_cast<double*>(in[3 * n + i].data()), p.numel());
      } else {
        AdamKernel(config(i), static_cast<float*>(p.data()),
                   static_cast<const float*>(in[n + i].data()),
                   static_cast<float*>(in[2 * n + i].data()),
                   static_cast<float*>(in[3 * n + i].data()), p.numel());
      }
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

// zero_grad(set_to_none=False) without learning which gradients exist (Note
// [Optimizer steps read .grad]): each parameter's .grad, where it has one,
// is zeroed in place.
Outs ZeroGrads(absl::Span<const Tensor> in, const Attrs&,
               const OpContext& ctx) {
  for (const Tensor& p : in) {
    const AutogradMeta* meta = p.autograd();
    if (meta == nullptr || !meta->grad.defined()) continue;
    TD_RETURN_IF_ERROR(Call1("zero_", {meta->grad}, {}, ctx).status());
  }
  return std::vector<Tensor>{};
}

}  // namespace

std::vector<OpDef> OptimOps() {
  std::vector<OpDef> ops;
  OpDef detach = MakeOp("detach", 1, 1, {},
                        "A view of input that does not require grad and has "
                        "no history (shares memory and version counter).");
  detach.view = Detach;
  detach.native_half = true;
  detach.differentiable = false;
  ops.push_back(std::move(detach));
  OpDef sgd = MakeOp(
      "sgd_step", 1, -1,
      {Required("n", AttrType::kInt), Required("lr", AttrType::kFloat),
       Optional("momentum", AttrType::kFloat, 0.0),
       Optional("dampening", AttrType::kFloat, 0.0),
       Optional("weight_decay", AttrType::kFloat, 0.0),
       Optional("nesterov", AttrType::kBool, false),
       Optional("maximize", AttrType::kBool, false),
       Optional("first_step", AttrType::kBool, false)},
      "torch.optim.SGD step in place over params (n) and, with momentum, "
      "momentum_buffers (n); each param's gradient is its .grad, and params "
      "without one are skipped. first_step: buffers start as the first "
      "update (torch's None buffer); with dampening 0 zeros agree.");
  sgd.composite = SgdStep;
  sgd.num_outputs = 0;
  sgd.differentiable = false;
  sgd.examples = {Example({{2, 3}, {4}, {2, 3}, {4}},
                          {{"n", int64_t{2}}, {"lr", 0.1}, {"momentum", 0.9}})};
  ops.push_back(std::move(sgd));
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
  ops.push_back(std::move(adam));
  OpDef zero = MakeOp("zero_grads", 1, -1, {},
                      "Zeroes each param's .grad in place where it has one "
                      "(torch.optim's zero_grad(set_to_none=False)).");
  zero.composite = ZeroGrads;
  zero.num_outputs = 0;
  zero.differentiable = false;
  ops.push_back(std::move(zero));
  return ops;
}

}  // namespace tensord
