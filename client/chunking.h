// The pure arithmetic of the wire: how a tensor upload splits into Put
// chunks, and when a pending batch must be sent. No I/O, no locks; the
// session (client/session.h) applies these decisions.
#ifndef TENSORD_CLIENT_CHUNKING_H_
#define TENSORD_CLIENT_CHUNKING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "client/dtype.h"

namespace tensord {
inline namespace client {

// Bytes reserved in every frame for the frame, batch and command headers
// around a Put payload (handle, dtype, shape, device, site, seq, tags).
inline constexpr size_t kFrameOverheadBytes = 4096;

struct Chunk {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool last = false;
};

// Splits `total_bytes` into consecutive chunks of at most `chunk_bytes`
// (> 0). An empty tensor is one empty chunk, so every upload has a first
// (meta-carrying) and a last Put.
std::vector<Chunk> PlanChunks(uint64_t total_bytes, uint64_t chunk_bytes);

// The largest Put payload to use: the daemon's chunk_bytes, shrunk so that a
// chunk plus its headers stays under max_frame_bytes. Zero values take the
// protocol's defaults (1 MiB, 8 MiB).
uint64_t EffectiveChunkBytes(uint64_t chunk_bytes, uint64_t max_frame_bytes);

// numel * itemsize with overflow and negative-dimension checks
// (INVALID_ARGUMENT).
absl::StatusOr<uint64_t> TensorBytes(DType dtype,
                                     const std::vector<int64_t>& shape);

// When to send the pending batch. Thresholds: a batch is sent once it holds
// `max_commands` commands or `flush_bytes` bytes; a command that would push
// the frame past `max_frame_bytes` forces a send before it is appended.
struct BatchPolicy {
  size_t flush_bytes = size_t{1} << 20;
  size_t max_commands = 1024;
  size_t max_frame_bytes = size_t{8} << 20;

  // Before appending a command of `next_bytes` to a batch of
  // `pending_commands` totalling `pending_bytes`: must the batch go first?
  bool FlushBefore(size_t pending_commands, size_t pending_bytes,
                   size_t next_bytes) const {
    return pending_commands > 0 &&
           pending_bytes + next_bytes + kFrameOverheadBytes > max_frame_bytes;
  }
  // After appending: has the batch reached a threshold?
  bool FlushAfter(size_t pending_commands, size_t pending_bytes) const {
    return pending_commands >= max_commands || pending_bytes >= flush_bytes;
  }
  // Can a command of this size travel at all?
  bool Fits(size_t command_bytes) const {
    return command_bytes + kFrameOverheadBytes <= max_frame_bytes;
  }
};

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_CHUNKING_H_
