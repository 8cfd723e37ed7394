// Session's autograd commands: queued like ops, in stream order, never
// waiting (docs/protocol.md "Autograd"). The handles they create get their
// meta from the batch's Ack, like op outputs.
#include "client/session.h"

namespace tensord {
inline namespace client {
namespace internal {

absl::StatusOr<std::vector<uint64_t>> Session::EnqueueBackward(
    const std::vector<uint64_t>& roots, const std::vector<uint64_t>& grads,
    bool retain_graph, bool create_graph, const std::vector<uint64_t>& inputs,
    bool allow_unused, const std::string& site) {
  MutexLock enqueue_lock(&enqueue_mu_);
  absl::StatusOr<uint64_t> first =
      ReserveHandles(static_cast<int>(inputs.size()));
  if (!first.ok()) return first.status();
  std::vector<uint64_t> outputs;
  for (size_t i = 0; i < inputs.size(); ++i) outputs.push_back(*first + i);
  v1::Command command;
  v1::Backward* b = command.mutable_backward();
  b->mutable_roots()->Add(roots.begin(), roots.end());
  b->mutable_grads()->Add(grads.begin(), grads.end());
  b->set_retain_graph(retain_graph);
  b->set_create_graph(create_graph);
  b->mutable_inputs()->Add(inputs.begin(), inputs.end());
  b->mutable_outputs()->Add(outputs.begin(), outputs.end());
  b->set_allow_unused(allow_unused);
  b->set_site(site);
  absl::Status status = Append(std::move(command), outputs, nullptr);
  if (!status.ok()) return status;
  return outputs;
}

absl::Status Session::EnqueueSetRequiresGrad(uint64_t handle,
                                             bool requires_grad,
                                             const std::string& site) {
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  v1::SetRequiresGrad* c = command.mutable_set_requires_grad();
  c->set_handle(handle);
  c->set_requires_grad(requires_grad);
  c->set_site(site);
  absl::Status status = Append(std::move(command), {}, nullptr);
  if (status.ok()) NoteRequiresGrad(handle, requires_grad);
  return status;
}

absl::StatusOr<uint64_t> Session::EnqueueGetGrad(uint64_t handle) {
  MutexLock enqueue_lock(&enqueue_mu_);
  absl::StatusOr<uint64_t> reserved = ReserveHandles(1);
  if (!reserved.ok()) return reserved.status();
  const uint64_t output = *reserved;
  v1::Command command;
  command.mutable_get_grad()->set_handle(handle);
  command.mutable_get_grad()->set_output(output);
  absl::Status status = Append(std::move(command), {output}, nullptr);
  if (!status.ok()) return status;
  return output;
}

absl::Status Session::EnqueueSetGrad(uint64_t handle, uint64_t grad) {
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  command.mutable_set_grad()->set_handle(handle);
  command.mutable_set_grad()->set_grad(grad);
  return Append(std::move(command), {}, nullptr);
}

void Session::NoteRequiresGrad(uint64_t handle, bool requires_grad) {
  MutexLock lock(&mu_);
  handles_.SetRequiresGrad(handle, requires_grad);
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
