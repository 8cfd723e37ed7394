// StreamSink: the FrameSink of one session stream, with the download flow
// control (Send waits while kMaxQueuedBytes are queued) and one write in
// flight at a time. Transport-agnostic: it drives a StreamWriter, which the
// gRPC reactor (grpc_stream.cc) implements.
#ifndef TENSORD_SERVER_STREAM_SINK_H_
#define TENSORD_SERVER_STREAM_SINK_H_

#include <cstddef>
#include <deque>
#include <memory>

#include "absl/status/status.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"
#include "server/frame_sink.h"

namespace tensord {

// Frames above this many queued bytes make Send wait (download flow control).
// Also what a client that stops reading makes its session hold outside the
// quota on the way out (docs/reliability.md "What one user can make the
// daemon hold"): 16 chunks of 1 MiB keep a download's writes going.
inline constexpr size_t kMaxQueuedBytes = 16 << 20;

// The stream a StreamSink drives. Called without the sink's lock held (the
// transport may run its reactions on the calling thread); at most one
// DoWrite is outstanding until the sink's WriteDone.
class StreamWriter {
 public:
  virtual ~StreamWriter() = default;
  virtual void DoWrite(std::shared_ptr<const v1::ServerFrame> frame) = 0;
  virtual void DoFinish(const absl::Status& status) = 0;
  virtual void DoRead() = 0;
};

// The FrameSink of one stream: queues frames and writes them one at a time.
// Shared between the reactor (the transport's threads) and the session's
// executor. Thread-safe.
class StreamSink : public FrameSink {
 public:
  explicit StreamSink(StreamWriter* reactor) : reactor_(reactor) {}
  void Send(v1::ServerFrame frame) override;
  void SendShared(std::shared_ptr<const v1::ServerFrame> frame) override;
  void End(absl::Status status) override;
  // From OnWriteDone: the previous write finished (ok=false: peer gone).
  void WriteDone(bool ok);
  // The peer is gone or the reactor is done: drop everything, wake senders.
  void MarkDead();
  // Waits for any in-flight ResumeReading, then forgets the reactor.
  void Detach();
  // The session drained its queue: read the next client frame.
  void ResumeReading();
  // Bytes of frames waiting for their write.
  size_t queued_bytes() {
    MutexLock lock(&mu_);
    return queued_bytes_;
  }

 private:
  // Starts the next write if none is in flight; call without mu_ held.
  void Pump();

  Mutex mu_;
  StreamWriter* reactor_ ABSL_GUARDED_BY(mu_);  // nullptr after OnDone
  // Frames are shared with the session's replay buffer (Note [Resume]).
  std::deque<std::shared_ptr<const v1::ServerFrame>> queue_
      ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // The frame being written (kept alive until OnWriteDone).
  std::shared_ptr<const v1::ServerFrame> current_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  int resuming_ ABSL_GUARDED_BY(mu_) = 0;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_STREAM_SINK_H_
