#include "client/optim.h"

#include <map>
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
  absl::StatusOr<std::vector<Tensor>> grads = GradsOf(params);
  if (!grads.ok()) return grads.status();
  for (const Tensor& g : *grads) {
    if (g.defined()) {
      absl::Status status =
          internal::CallOp(g.impl()->session, "zero_", {g}, {}, 1, Site())
              .status();
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : params_(std::move(params)), options_(options), buffers_(params_.size()) {}

absl::Status SGD::step(Site site) {
  absl::StatusOr<std::vector<Tensor>> grads = GradsOf(params_);
  if (!grads.ok()) return grads.status();
  std::vector<Tensor> ps, gs, bufs;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!(*grads)[i].defined()) continue;
    ps.push_back(params_[i]);
    gs.push_back((*grads)[i]);
    if (options_.momentum != 0) {
      if (!buffers_[i].defined()) {
        // PyTorch starts the buffer at the first update direction d; the
        // fused op computes m * buf + (1 - dampening) * d, so zeros match
        // for dampening 0 and dampening * d / m otherwise.
        Tensor d = options_.maximize ? -(*grads)[i] : (*grads)[i];
        if (options_.weight_decay != 0) {
          d = d + params_[i] * options_.weight_decay;
        }
        buffers_[i] = options_.dampening == 0
                          ? ZerosLike(params_[i])
                          : d * (options_.dampening / options_.momentum);
      }
      bufs.push_back(buffers_[i]);
    }
  }
  if (ps.empty()) return absl::OkStatus();
  std::vector<Tensor> inputs = ps;
  inputs.insert(inputs.end(), gs.begin(), gs.end());
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

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : params_(std::move(params)),
      options_(options),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()),
      steps_(params_.size(), 0) {}

absl::Status Adam::step(Site site) {
  absl::StatusOr<std::vector<Tensor>> grads = GradsOf(params_);
  if (!grads.ok()) return grads.status();
  // Parameters sharing a step count (normally all) go in one call.
  std::map<int64_t, std::vector<size_t>> by_step;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!(*grads)[i].defined()) continue;
    if (steps_[i] == 0) {
      exp_avg_[i] = ZerosLike(params_[i]);
      exp_avg_sq_[i] = ZerosLike(params_[i]);
    }
    by_step[++steps_[i]].push_back(i);
  }
  for (const auto& [step, idx] : by_step) {
    std::vector<Tensor> inputs;
    for (const auto* list : {&params_, &*grads, &exp_avg_, &exp_avg_sq_}) {
      for (size_t i : idx) inputs.push_back((*list)[i]);
    }
    absl::Status status =
        Fused("adam_step", std::move(inputs),
              {{"n", static_cast<int64_t>(idx.size())},
               {"lr", options_.lr},
               {"beta1", options_.beta1},
               {"beta2", options_.beta2},
               {"eps", options_.eps},
               {"weight_decay", options_.weight_decay},
               {"step", step},
               {"decoupled_weight_decay", options_.decoupled_weight_decay},
               {"maximize", options_.maximize}},
              site);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace optim
}  // namespace client
}  // namespace tensord
