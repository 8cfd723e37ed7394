// Tensor's autograd members: thin wrappers over the Session's autograd
// commands (docs/protocol.md "Autograd").
#include <string>
#include <utility>

#include "client/session.h"
#include "client/tensor.h"
#include "client/tensor_impl.h"

namespace tensord {
inline namespace client {
namespace {

// The impl of a defined, locally healthy tensor.
absl::StatusOr<internal::TensorImpl*> Live(const Tensor& t, const char* what) {
  if (t.impl() == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": undefined Tensor"));
  }
  if (!t.impl()->error.ok()) return t.impl()->error;
  return t.impl().get();
}

absl::StatusOr<internal::HandleMeta> MetaOf(const Tensor& t, const char* what) {
  absl::StatusOr<internal::TensorImpl*> impl = Live(t, what);
  if (!impl.ok()) return impl.status();
  absl::StatusOr<internal::HandleMeta> meta =
      (*impl)->session->WaitMeta((*impl)->handle);
  if (!meta.ok()) return meta.status();
  if (!meta->error.ok()) return meta->error;
  return meta;
}

}  // namespace

absl::Status Tensor::backward(const Tensor& gradient, bool retain_graph,
                              bool create_graph, Site site) const {
  absl::StatusOr<internal::TensorImpl*> impl = Live(*this, "backward");
  if (!impl.ok()) return impl.status();
  std::vector<uint64_t> grads;
  if (gradient.defined()) {
    absl::StatusOr<internal::TensorImpl*> g = Live(gradient, "backward");
    if (!g.ok()) return g.status();
    if ((*g)->session != (*impl)->session) {
      return absl::InvalidArgumentError(
          "backward: the gradient belongs to another tensord session");
    }
    grads.push_back((*g)->handle);
  }
  const std::shared_ptr<internal::Session>& s = (*impl)->session;
  absl::StatusOr<std::vector<uint64_t>> out =
      s->EnqueueBackward({(*impl)->handle}, grads, retain_graph || create_graph,
                         create_graph, {}, false, site.ToString());
  if (!out.ok()) return out.status();
  // Note [Deferred backward errors]: no wait; the next read reports them.
  return s->QueueCheck();
}

absl::StatusOr<Tensor> Tensor::grad() const {
  absl::StatusOr<internal::TensorImpl*> impl = Live(*this, "grad");
  if (!impl.ok()) return impl.status();
  const std::shared_ptr<internal::Session>& s = (*impl)->session;
  absl::StatusOr<uint64_t> handle = s->EnqueueGetGrad((*impl)->handle);
  if (!handle.ok()) return handle.status();
  Tensor g(std::make_shared<internal::TensorImpl>(s, *handle));
  absl::StatusOr<internal::HandleMeta> meta = MetaOf(g, "grad");
  if (!meta.ok()) return meta.status();
  return meta->is_none ? Tensor() : g;
}

absl::Status Tensor::set_grad(const Tensor& grad) const {
  absl::StatusOr<internal::TensorImpl*> impl = Live(*this, "set_grad");
  if (!impl.ok()) return impl.status();
  uint64_t g = 0;
  if (grad.defined()) {
    absl::StatusOr<internal::TensorImpl*> gi = Live(grad, "set_grad");
    if (!gi.ok()) return gi.status();
    if ((*gi)->session != (*impl)->session) {
      return absl::InvalidArgumentError(
          "set_grad: the gradient belongs to another tensord session");
    }
    g = (*gi)->handle;
  }
  return (*impl)->session->EnqueueSetGrad((*impl)->handle, g);
}

absl::Status Tensor::set_requires_grad(bool requires_grad, Site site) const {
  absl::StatusOr<internal::TensorImpl*> impl = Live(*this, "set_requires_grad");
  if (!impl.ok()) return impl.status();
  return (*impl)->session->EnqueueSetRequiresGrad(
      (*impl)->handle, requires_grad, site.ToString());
}

Tensor Tensor::requires_grad_(bool requires_grad, Site site) const {
  absl::Status status = set_requires_grad(requires_grad, site);
  return status.ok() ? *this : Tensor::FromError(status);
}

Tensor Tensor::detach(Site site) const {
  return internal::CallOne("detach", {*this}, {}, site);
}

absl::StatusOr<bool> Tensor::is_leaf() const {
  absl::StatusOr<internal::HandleMeta> meta = MetaOf(*this, "is_leaf");
  if (!meta.ok()) return meta.status();
  return meta->is_leaf;
}

absl::StatusOr<std::string> Tensor::grad_fn() const {
  absl::StatusOr<internal::HandleMeta> meta = MetaOf(*this, "grad_fn");
  if (!meta.ok()) return meta.status();
  return meta->grad_fn;
}

}  // namespace client
}  // namespace tensord
