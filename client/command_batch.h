// The commands a C++ client session has appended and not yet sent, in a
// PendingFrame (Note [Client frame arenas], client/pending_frame.h), each
// numbered by the next seq; and the releases queued by Tensor destructors,
// which join the batch as one Release command ahead of the next command or
// at the flush, never between the chunks of an upload (held back while
// in_chunked_put). When to send it is the session's (BatchPolicy).
//
// Thread safety: none. Session keeps its batch under its mu_.
#ifndef TENSORD_CLIENT_COMMAND_BATCH_H_
#define TENSORD_CLIENT_COMMAND_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "client/pending_frame.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {
namespace internal {

class CommandBatch {
 public:
  using PackFn = absl::FunctionRef<void(std::string*)>;

  // Calls and Releases go as entries of packed runs (Note [Packed
  // commands]); set once, when the Welcome says the daemon reads them.
  void set_packed(bool packed) { packed_ = packed; }
  // While set (an upload's chunks are being appended), queued releases stay
  // out of the batch.
  void set_in_chunked_put(bool in) { in_chunked_put_ = in; }

  // Neither a command nor a release is pending.
  bool empty() const { return frame_.size() == 0 && releases_.empty(); }
  // Something to send: a command, or releases not held back.
  bool ready() const {
    return frame_.size() > 0 || (!releases_.empty() && !in_chunked_put_);
  }
  bool has_releases() const { return !releases_.empty(); }
  // The commands in the batch (each entry of a packed run counted), and the
  // bound on their encoded size the appends gave.
  int size() const { return frame_.size(); }
  size_t bytes() const { return bytes_; }
  // When the batch was opened: its first command or release since the last
  // Take.
  absl::Time opened() const { return opened_; }
  // The seq the next command gets; the last one in the batch (0: none).
  uint64_t next_seq() const { return next_seq_; }
  uint64_t last_seq() const { return frame_.last_seq(); }

  // Appends a command with the next seq (returned), `size` bounding its
  // encoded size from above: written by `fill`, or by `*pack` as an entry of
  // a packed run when given and packed runs are on.
  uint64_t Add(size_t size, absl::FunctionRef<void(v1::Command*)> fill,
               const PackFn* pack);
  void QueueRelease(uint64_t handle);
  // Appends the queued releases as one Release command (none while held
  // back).
  void MoveReleasesIn();
  // The batch, its received_seq set to `acked_seq`; an empty one takes its
  // place.
  std::shared_ptr<const v1::ClientFrame> Take(uint64_t acked_seq);

 private:
  PendingFrame frame_;
  size_t bytes_ = 0;
  absl::Time opened_;
  std::vector<uint64_t> releases_;
  bool in_chunked_put_ = false;
  uint64_t next_seq_ = 1;
  bool packed_ = false;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_COMMAND_BATCH_H_
