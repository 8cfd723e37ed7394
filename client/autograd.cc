#include "client/autograd.h"

#include <memory>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/session.h"
#include "client/tensor_impl.h"

namespace tensord {
inline namespace client {

NoGradGuard::NoGradGuard(Client& client)
    : client_(client), previous_(client.internal_session()->grad_enabled()) {
  if (previous_) client_.set_grad_enabled(false).IgnoreError();
}

NoGradGuard::~NoGradGuard() {
  if (previous_) client_.set_grad_enabled(true).IgnoreError();
}

namespace autograd {
namespace {

absl::Status Handles(const std::vector<Tensor>& ts, const char* what,
                     std::shared_ptr<internal::Session>* session,
                     std::vector<uint64_t>* out) {
  for (const Tensor& t : ts) {
    if (t.impl() == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("autograd::grad: undefined Tensor in ", what));
    }
    if (!t.impl()->error.ok()) return t.impl()->error;
    if (*session == nullptr) *session = t.impl()->session;
    if (t.impl()->session != *session) {
      return absl::InvalidArgumentError(
          "autograd::grad: tensors of different tensord sessions");
    }
    out->push_back(t.impl()->handle);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> grad(
    const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
    const std::vector<Tensor>& grad_outputs, bool retain_graph,
    bool create_graph, bool allow_unused, Site site) {
  if (outputs.empty() || inputs.empty()) {
    return absl::InvalidArgumentError(
        "autograd::grad needs at least one output and one input");
  }
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("autograd::grad: ", grad_outputs.size(),
                     " grad_outputs for ", outputs.size(), " outputs"));
  }
  std::shared_ptr<internal::Session> s;
  std::vector<uint64_t> roots, grads, ins;
  for (auto [ts, what, out] :
       {std::tuple{&outputs, "outputs", &roots},
        std::tuple{&grad_outputs, "grad_outputs", &grads},
        std::tuple{&inputs, "inputs", &ins}}) {
    absl::Status status = Handles(*ts, what, &s, out);
    if (!status.ok()) return status;
  }
  absl::StatusOr<std::vector<uint64_t>> handles =
      s->EnqueueBackward(roots, grads, retain_graph || create_graph,
                         create_graph, ins, allow_unused, site.ToString());
  if (!handles.ok()) return handles.status();
  std::vector<Tensor> result;
  for (size_t i = 0; i < handles->size(); ++i) {
    Tensor g(std::make_shared<internal::TensorImpl>(s, (*handles)[i]));
    absl::StatusOr<internal::HandleMeta> meta = s->WaitMeta((*handles)[i]);
    if (!meta.ok()) return meta.status();
    if (!meta->error.ok()) return meta->error;
    if (meta->is_none && !allow_unused) {
      return absl::InvalidArgumentError(absl::StrCat(
          "autograd::grad: input ", i,
          " was not used in the graph (pass allow_unused = true)"));
    }
    result.push_back(meta->is_none ? Tensor() : std::move(g));
  }
  return result;
}

}  // namespace autograd
}  // namespace client
}  // namespace tensord
