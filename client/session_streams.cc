// Session's stream, event and TF32 commands (session.h; docs/protocol.md
// "Streams and events"). The current stream id is tracked here so events
// are recorded on and waited by the stream the next ops use.
#include "client/session.h"

namespace tensord {
inline namespace client {
namespace internal {

absl::Status Session::SetStream(uint32_t stream_id) {
  v1::SetOptions options;
  options.set_stream(stream_id);
  return EnqueueOptions(options);  // remembers stream_id_
}

uint32_t Session::current_stream() const {
  MutexLock lock(&mu_);
  return stream_id_;
}

absl::Status Session::RecordEvent(uint64_t event) {
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  command.mutable_record_event()->set_event(event);
  command.mutable_record_event()->set_stream(current_stream());
  return Append(std::move(command), {}, nullptr);
}

absl::Status Session::WaitEvent(uint64_t event) {
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  command.mutable_wait_event()->set_event(event);
  command.mutable_wait_event()->set_stream(current_stream());
  return Append(std::move(command), {}, nullptr);
}

absl::Status Session::SetAllowTf32(bool allow) {
  v1::SetOptions options;
  options.set_allow_tf32(allow);
  return EnqueueOptions(options);
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
