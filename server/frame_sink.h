// Where a session's replies go: the transport (gRPC stream) or a test.
//
// Thread safety: Send/End are called from the session's executor thread;
// implementations synchronise with their own transport threads.
#ifndef TENSORD_SERVER_FRAME_SINK_H_
#define TENSORD_SERVER_FRAME_SINK_H_

#include <memory>

#include "absl/status/status.h"
#include "proto/tensord.pb.h"

namespace tensord {

class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // Queues a frame for the client. May block while the transport's outbound
  // buffer is full (flow control for large downloads); returns at once, and
  // drops the frame, once the peer is gone.
  virtual void Send(v1::ServerFrame frame) = 0;
  // The same for a frame that the caller keeps too (SessionOutbox's replay
  // buffer): a transport that can write from a shared frame overrides this
  // to skip the copy, which for a Data chunk is a copy of its payload.
  virtual void SendShared(std::shared_ptr<const v1::ServerFrame> frame) {
    Send(*frame);
  }
  // The same for a frame handed over whole, possibly on an arena the
  // pointer keeps alive (the executor's Acks, Note [Frame arenas]): the
  // outbox keeps it without a copy.
  virtual void SendOwned(std::shared_ptr<v1::ServerFrame> frame) {
    Send(std::move(*frame));
  }
  // The session is over: no more frames follow; `status` ends the stream.
  virtual void End(absl::Status status) = 0;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_FRAME_SINK_H_
