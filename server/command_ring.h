// The reader of a session's command ring (proto/command_ring.h;
// docs/protocol.md "Command ring"): a thread of the session that sleeps on
// the ring's doorbell, parses each record the same-host client published as
// a ClientFrame{batch} on an arena of its own (Note [Frame arenas]) and hands
// the batch to the session, exactly as the gRPC reactor hands it a batch read
// from the stream. The client's gRPC Python send path (60-150 us a frame on
// 2 vCPUs) is then no longer on the way of a value read.
//
// A record is consumed (the tail advanced) only after its batch was handed
// over, so "tail == head" tells the client that everything it put in the ring
// is queued, and a frame it sends on the stream next comes after it.
// A malformed record (bad length or magic, not a ClientFrame, not a batch)
// ends the session through `fail` with a message naming the ring position;
// the ring is the session's own, so nothing else is affected.
//
// Thread safety: Drain, Stop and NoteStreamBatch may be called from any
// thread; the hooks run on the reader thread.
#ifndef TENSORD_SERVER_COMMAND_RING_H_
#define TENSORD_SERVER_COMMAND_RING_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "google/protobuf/arena.h"
#include "proto/command_ring.h"
#include "proto/tensord.pb.h"
#include "server/shm_transfer.h"

namespace tensord {

class CommandRing {
 public:
  struct Hooks {
    // Queues (or runs) a batch parsed on `arena`; false when the session's
    // queue is now over its bound (Session::Submit's contract).
    std::function<bool(std::unique_ptr<google::protobuf::Arena> arena,
                       v1::Batch* batch)>
        submit;
    // Blocks until the session's queue has room again or it is ending.
    std::function<void()> wait_for_room;
    // A malformed record: the session ends with this status.
    std::function<void(absl::Status)> fail;
    // After Drain(): everything published before it was handed over.
    std::function<void()> drained;
    // Note [Held acks]: sends the session's held Acks if the client waits
    // for one (`ack_wanted`, the ring's word) or they are old enough;
    // returns how many ns until they are due (-1: none held).
    std::function<int64_t(uint64_t ack_wanted)> flush_acks;
  };

  // Starts reading the ring of `region` (which must have one and outlive
  // this object). `spin_us`: how long the reader polls an empty ring (with
  // sched_yield, so any other thread wanting its CPU runs first) before it
  // sleeps on the doorbell: a client reading values sends its next batch
  // within tens of microseconds, and a sleeping thread takes longer to wake.
  CommandRing(const ShmRegion* region, Hooks hooks, int spin_us);
  // Stops and joins the reader (detaches it when called on that thread).
  ~CommandRing();
  CommandRing(const CommandRing&) = delete;
  CommandRing& operator=(const CommandRing&) = delete;

  // Reads what the client has published, then calls `drained` and stops.
  // Returns at once. The client ends its stream only after its last record,
  // so this is called (by Session::Close) after it was published.
  void Drain();
  // Stops reading now; records not read are dropped. Returns at once.
  void Stop();
  // The batch whose last command seq is `seq` came on the stream and is
  // queued: publishes stream_seq and wakes a client waiting for it.
  void NoteStreamBatch(uint64_t seq);
  // Records handed to the session so far.
  uint64_t frames() const { return frames_.load(std::memory_order_relaxed); }
  // The reader thread (whose inline batches' Acks the session holds).
  std::thread::id reader_id() const { return reader_.get_id(); }

 private:
  enum State : uint32_t { kRunning, kDraining, kStopping };
  void Loop();
  // Waits until the ring holds something or the state changed; false when
  // the reader should stop (after `drained` when draining).
  bool WaitForRecord(uint64_t tail);
  // Reads the record at `*tail`; advances it. False on a malformed record
  // (after `fail`).
  bool ReadRecord(uint64_t* tail, uint64_t head);
  void Publish(uint64_t tail);
  void WakeClient();

  const command_ring::Control words_;
  char* const records_;
  const uint64_t ring_bytes_;
  const Hooks hooks_;
  const int spin_us_;
  std::atomic<uint32_t> state_{kRunning};
  std::atomic<uint64_t> frames_{0};
  std::thread reader_;  // last: starts after every member is ready
};

}  // namespace tensord

#endif  // TENSORD_SERVER_COMMAND_RING_H_
