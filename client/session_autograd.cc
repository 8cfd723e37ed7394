// Session's autograd commands: queued like ops, in stream order, never
// waiting (docs/protocol.md "Autograd"). The handles they create get their
// meta from the batch's Ack, like op outputs.
#include <optional>
#include <utility>

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

// Note [Deferred backward errors] (the Python client's is in _batch.py):
// backward() used to end with a Sync so that its errors (a second pass
// without retain_graph, a saved tensor modified in place) came back from the
// call, as PyTorch raises them; that is a round trip per training step to a
// remote daemon (issue 27: a step waits once, for the value it reads). Now
// the Backward is followed by a host-only Sync nobody waits for: its report,
// the one the wait got, is returned by the next Download or Sync, like a
// CUDA asynchronous error in PyTorch, and names the backward's call site.
// The daemon answers it before any later read, so a read waits for it only
// when its own answer came by another path (the mailbox).
absl::Status Session::QueueCheck() {
  MutexLock enqueue_lock(&enqueue_mu_);
  absl::StatusOr<uint64_t> id = EnqueueRequest(
      RequestTable::Kind::kSync, {}, [](uint64_t id, v1::Command* command) {
        command->mutable_sync()->set_request_id(id);
        command->mutable_sync()->set_host_only(true);
      });
  if (!id.ok()) return id.status();
  MutexLock lock(&mu_);
  checks_.push_back(*id);
  return absl::OkStatus();
}

absl::Status Session::TakeChecksLocked() {
  if (checks_.empty()) return absl::OkStatus();
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return requests_.SyncDone(checks_.back()) || !stream_error_.ok();
  };
  AwaitLocked(absl::Condition(&ready));  // answered in order: the last last
  absl::Status first;
  for (uint64_t id : checks_) {
    std::optional<absl::Status> report = requests_.TakeSync(id);
    if (!first.ok()) continue;
    first = report.has_value() ? *std::move(report) : stream_error_;
  }
  checks_.clear();
  return first;
}

void Session::NoteRequiresGrad(uint64_t handle, bool requires_grad) {
  MutexLock lock(&mu_);
  handles_.SetRequiresGrad(handle, requires_grad);
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
