#include "client/optim.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/session.h"
#include "client/tensor_impl.h"

namespace tensord {
inline namespace client {
namespace optim {
namespace {

absl::Status Fused(const char* op, std::vector<Tensor> inputs, AttrMap attrs,
                   const Site& site) {
  absl::StatusOr<std::vector<Tensor>> out = internal::CallOp(
      inputs.front().impl()->session, op, inputs, attrs, 0, site);
  return out.status();
}

Tensor ZerosLike(const Tensor& t) {
  return internal::CallOne("zeros_like", {t}, {}, Site());
}

// A step count as torch.optim keeps it: a float32 CPU scalar, zero; the
// daemon counts it (Note [Adam step counts] in runtime/ops/adam_step_ops.cc).
Tensor StepCount(const Tensor& like) {
  return internal::CallOne(like.impl()->session, "zeros", {},
                           {{"shape", std::vector<int64_t>{}},
                            {"dtype", DType::kFloat32},
                            {"device", std::string("cpu")}},
                           Site());
}

// Parameters must be defined and unpoisoned: errors found here, not on the
// daemon.
absl::Status CheckParams(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) {
    if (p.impl() == nullptr) {
      return absl::InvalidArgumentError("optimizer: undefined parameter");
    }
    if (!p.impl()->error.ok()) return p.impl()->error;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> GradsOf(const std::vector<Tensor>& params) {
  std::vector<std::pair<std::shared_ptr<internal::Session>, uint64_t>> asked;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (p.impl() == nullptr) {
      return absl::InvalidArgumentError("optimizer: undefined parameter");
    }
    if (!p.impl()->error.ok()) return p.impl()->error;
    const std::shared_ptr<internal::Session>& s = p.impl()->session;
    absl::StatusOr<uint64_t> h = s->EnqueueGetGrad(p.impl()->handle);
    if (!h.ok()) return h.status();
    grads.emplace_back(std::make_shared<internal::TensorImpl>(s, *h));
    asked.emplace_back(s, *h);
  }
  for (size_t i = 0; i < grads.size(); ++i) {    // the first waits, the rest
    absl::StatusOr<internal::HandleMeta> meta =  // are known by then
        asked[i].first->WaitMeta(asked[i].second);
    if (!meta.ok()) return meta.status();
    if (!meta->error.ok()) return meta->error;
    if (meta->is_none) grads[i] = Tensor();
  }
  return grads;
}

absl::Status ZeroGrad(const std::vector<Tensor>& params, bool set_to_none) {
  if (set_to_none) {
    for (const Tensor& p : params) {
      absl::Status status = p.set_grad(Tensor());
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  absl::Status status = CheckParams(params);
  if (!status.ok() || params.empty()) return status;
  // The daemon zeroes the gradients that exist (no round trip to learn them).
  return Fused("zero_grads", params, {}, Site());
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : params_(std::move(params)), options_(options), buffers_(params_.size()) {}

absl::Status SGD::step(Site site) {
  absl::Status status = CheckParams(params_);
  if (!status.ok()) return status;
  if (options_.momentum != 0) {
    status = MakeBuffers();
    if (!status.ok()) return status;
  }
  // The daemon reads each .grad and skips parameters without one (Note
  // [Optimizer steps read .grad]): nothing here waits for it.
  std::vector<Tensor> ps, bufs;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (options_.momentum != 0) {
      if (!buffers_[i].defined()) continue;  // no gradient yet
      bufs.push_back(buffers_[i]);
    }
    ps.push_back(params_[i]);
  }
  if (ps.empty()) return absl::OkStatus();
  std::vector<Tensor> inputs = ps;
  inputs.insert(inputs.end(), bufs.begin(), bufs.end());
  return Fused("sgd_step", std::move(inputs),
               {{"n", static_cast<int64_t>(ps.size())},
                {"lr", options_.lr},
                {"momentum", options_.momentum},
                {"dampening", options_.dampening},
                {"weight_decay", options_.weight_decay},
                {"nesterov", options_.nesterov},
                {"maximize", options_.maximize}},
               site);
}

// PyTorch starts a buffer at the first update direction d; the fused op
// computes m * buf + (1 - dampening) * d, so zeros match for dampening 0
// (made for every parameter, queued) and dampening * d / m otherwise (made
// for the parameters that have a gradient, which this learns: one round
// trip, at a parameter's first step only).
absl::Status SGD::MakeBuffers() {
  std::vector<size_t> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!buffers_[i].defined()) missing.push_back(i);
  }
  if (missing.empty()) return absl::OkStatus();
  if (options_.dampening == 0) {
    for (size_t i : missing) buffers_[i] = ZerosLike(params_[i]);
    return absl::OkStatus();
  }
  std::vector<Tensor> asked;
  for (size_t i : missing) asked.push_back(params_[i]);
  absl::StatusOr<std::vector<Tensor>> grads = GradsOf(asked);
  if (!grads.ok()) return grads.status();
  for (size_t k = 0; k < missing.size(); ++k) {
    const Tensor& g = (*grads)[k];
    if (!g.defined()) continue;
    const Tensor& p = params_[missing[k]];
    Tensor d = options_.maximize ? -g : g;
    if (options_.weight_decay != 0) d = d + p * options_.weight_decay;
    buffers_[missing[k]] = d * (options_.dampening / options_.momentum);
  }
  return absl::OkStatus();
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : params_(std::move(params)),
      options_(options),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()),
      steps_(params_.size()) {}

absl::Status Adam::step(Site site) {
  absl::Status status = CheckParams(params_);
  if (!status.ok() || params_.empty()) return status;
  // State for every parameter at its first step, queued; the daemon reads
  // each .grad, skips parameters without one and counts the steps of the
  // others (Notes [Optimizer steps read .grad], [Adam step counts]).
  for (size_t i = 0; i < params_.size(); ++i) {
    if (steps_[i].defined()) continue;
    exp_avg_[i] = ZerosLike(params_[i]);
    exp_avg_sq_[i] = ZerosLike(params_[i]);
    steps_[i] = StepCount(params_[i]);
  }
  std::vector<Tensor> inputs;
  for (const auto* list : {&params_, &exp_avg_, &exp_avg_sq_, &steps_}) {
    inputs.insert(inputs.end(), list->begin(), list->end());
  }
  return Fused("adam_step", std::move(inputs),
               {{"n", static_cast<int64_t>(params_.size())},
                {"lr", options_.lr},
                {"beta1", options_.beta1},
                {"beta2", options_.beta2},
                {"eps", options_.eps},
                {"weight_decay", options_.weight_decay},
                {"decoupled_weight_decay", options_.decoupled_weight_decay},
                {"maximize", options_.maximize}},
               site);
}

}  // namespace optim
}  // namespace client
}  // namespace tensord
