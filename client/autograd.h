// Autograd helpers of the C++ client: grad mode guards and autograd::grad.
// Tensor's own members (backward, grad, set_requires_grad, detach) are in
// client/tensor.h; the engine runs in the daemon.
#ifndef TENSORD_CLIENT_AUTOGRAD_H_
#define TENSORD_CLIENT_AUTOGRAD_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/site.h"
#include "client/tensor.h"

namespace tensord {
inline namespace client {

class Client;

// RAII: ops issued while it lives record no graph (SetOptions grad_enabled
// false, queued); the previous mode is restored on destruction. Not
// thread-local: the mode is the session's, so guard from one thread at a
// time (as the daemon sees commands in stream order).
class NoGradGuard {
 public:
  explicit NoGradGuard(Client& client);
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  Client& client_;
  bool previous_;
};

namespace autograd {

// torch.autograd.grad: d(outputs)/d(inputs) in new tensors, one per input
// (undefined for an unused input when allow_unused), without touching .grad.
// `grad_outputs`: empty for scalar outputs, else one per output. Waits for
// the results' Ack (one round trip); a failing backward is returned.
absl::StatusOr<std::vector<Tensor>> grad(
    const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
    const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
    bool create_graph = false, bool allow_unused = false,
    Site site = Site::Current());

}  // namespace autograd
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_AUTOGRAD_H_
