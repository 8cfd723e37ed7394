// Optimizers of the C++ client: each step() is ONE fused daemon command
// (`sgd_step`, `adam_step`), queued: the daemon reads each parameter's .grad
// and skips those without one, as PyTorch does (Note [Optimizer steps read
// .grad] in runtime/ops/optim_step.h), so neither step() nor zero_grad()
// waits for it. State tensors (momentum buffers, Adam's moments and step
// counts) are created, queued, at a parameter's first step and live in the
// daemon (SGD with dampening != 0 learns which parameters have a gradient
// at their first step: one round trip, once).
//
//   tensord::optim::SGD opt({w, b}, {.lr = 0.1, .momentum = 0.9});
//   opt.zero_grad();  loss.backward();  opt.step();
//
// Ownership: an optimizer holds references to its parameter Tensors and its
// state Tensors. Thread safety: none (one training loop per optimizer).
#ifndef TENSORD_CLIENT_OPTIM_H_
#define TENSORD_CLIENT_OPTIM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/site.h"
#include "client/tensor.h"

namespace tensord {
inline namespace client {
namespace optim {

// The .grad of each tensor (undefined where None), asked in one batch.
absl::StatusOr<std::vector<Tensor>> GradsOf(const std::vector<Tensor>& params);

// zero_grad of both optimizers: .grad = None, or existing gradients zeroed
// in place by the daemon (`zero_grads`); queued either way.
absl::Status ZeroGrad(const std::vector<Tensor>& params, bool set_to_none);

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
};

// torch.optim.SGD.
class SGD {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  // One optimisation step; returns local errors and poisoned gradients.
  absl::Status step(Site site = Site::Current());
  absl::Status zero_grad(bool set_to_none = true) {
    return ZeroGrad(params_, set_to_none);
  }
  SGDOptions& options() { return options_; }
  const std::vector<Tensor>& params() const { return params_; }
  // Momentum buffers (undefined until the parameter's first step).
  const std::vector<Tensor>& momentum_buffers() const { return buffers_; }

 private:
  absl::Status MakeBuffers();

  std::vector<Tensor> params_;
  SGDOptions options_;
  std::vector<Tensor> buffers_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // true: AdamW
  bool maximize = false;
};

// torch.optim.Adam, or AdamW with decoupled_weight_decay (see AdamW()).
class Adam {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);
  absl::Status step(Site site = Site::Current());
  absl::Status zero_grad(bool set_to_none = true) {
    return ZeroGrad(params_, set_to_none);
  }
  AdamOptions& options() { return options_; }
  const std::vector<Tensor>& params() const { return params_; }
  // Steps taken by each parameter (a parameter without grad does not step):
  // float32 CPU scalars counted by the daemon (torch's state["step"]),
  // undefined before the first step().
  const std::vector<Tensor>& steps() const { return steps_; }

 private:
  std::vector<Tensor> params_;
  AdamOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_, steps_;
};

// AdamW's defaults: weight_decay 1e-2, decoupled.
inline AdamOptions AdamWOptions() {
  AdamOptions o;
  o.weight_decay = 1e-2;
  o.decoupled_weight_decay = true;
  return o;
}

}  // namespace optim
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_OPTIM_H_
