// sgd_step: torch.optim.SGD's single-tensor algorithm over all parameters in
// one command, step for step, in the parameters' dtype (fused loops on the
// CPU, fused kernels on CUDA, composed ops otherwise: optim_step.h). Updates
// params and momentum buffers in place and bumps their versions; no outputs,
// not differentiable.
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
  optim_step::ForEachCpuChunk(
      in, n, groups, [&](int64_t i, int64_t b, int64_t e) {
        const Tensor& p = in[i];
        void* buf = c.momentum != 0 ? in[2 * n + i].data() : nullptr;
        if (p.dtype() == DType::kFloat64) {
          SgdKernel(c, static_cast<double*>(p.data()) + b,
                    static_cast<const double*>(in[n + i].data()) + b,
                    buf ? static_cast<double*>(buf) + b : nullptr, e - b);
        } else {
          SgdKernel(c, static_cast<float*>(p.data()) + b,
                    static_cast<const float*>(in[n + i].data()) + b,
                    buf ? static_cast<float*>(buf) + b : nullptr, e - b);
        }
      });
  for (int64_t i = 0; i < n; ++i) {
    if (!Fast(in, n, i, groups)) continue;  // bumped by the in-place ops
    in[i].storage()->BumpVersion();
    if (c.momentum != 0) in[2 * n + i].storage()->BumpVersion();
  }
  return std::vector<Tensor>{};
}
}  // namespace

OpDef SgdStepOp() {
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
  return sgd;
}

}  // namespace tensord
