// CommandRunner's reads of tensor bytes for Gets (Note [Async downloads],
// runtime/completion_queue.h): CPU memory is read in place; a device with
// pinned staging memory copies into it on the session's stream and the data
// goes out when the copy has finished, while the executor runs the session's
// later commands. Stream order makes the copy read the value the tensor had
// at the Get's position; the continuation holds the tensor's storage (and
// the staging buffer) until then.
#include <memory>
#include <utility>
#include <vector>

#include "server/command_runner.h"

namespace tensord {

void CommandRunner::ReadForGet(const Tensor& t, size_t offset, size_t n,
                               ReadDone then) {
  Device* device = t.device();
  const char* src = static_cast<const char*>(t.data()) + offset;
  if (device->kind() == DeviceKind::kCpu) return then(absl::OkStatus(), src);
  absl::StatusOr<StagingBuffer> staging =
      n == 0 ? absl::UnimplementedError("nothing to stage")
             : device->AllocateStaging(n);
  if (!staging.ok()) {
    // No pinned memory (a device without staging, or it ran out): a copy
    // that waits, as before staging existed.
    std::vector<char> host(n);
    absl::Status s = device->CopyToHost(host.data(), src, n, nullptr);
    return then(s, host.data());
  }
  // The session's current stream (SetOptions.stream): the Get is ordered
  // after the work queued there, as a copy on torch's current stream is.
  absl::StatusOr<StreamHandle> stream =
      device->SessionStream(config_.session, stream_id_);
  if (!stream.ok()) return then(stream.status(), nullptr);
  // Shared (std::function copies): the tensor keeps its storage alive and
  // the buffer stays out of the staging cache until the data is sent.
  struct InFlight {
    Tensor tensor;
    StagingBuffer buffer;
  };
  auto in_flight = std::make_shared<InFlight>(InFlight{t, *std::move(staging)});
  char* dst = in_flight->buffer.data();
  device->CopyToHostAsync(
      dst, src, n, *stream,
      downloads_.Track(
          [in_flight, then = std::move(then)](const absl::Status& s) mutable {
            then(s, s.ok() ? in_flight->buffer.data() : nullptr);
          }));
}

}  // namespace tensord
