// The batch a client session is filling, on its own protobuf arena.
//
// Note [Client frame arenas]: appending a command to a heap-allocated frame
// costs a malloc per message, repeated field and string, and as many frees
// once the daemon acknowledges it; on the arena they are pointer bumps and
// one free of the arena's blocks. A flushed frame keeps its arena alive (an
// aliasing shared_ptr) for as long as a resume may resend it.
// Its blocks come from runtime/core/block_cache.h (Note [Frame block cache]).
// Thread-compatible: the session guards it with its mutex.
#ifndef TENSORD_CLIENT_PENDING_FRAME_H_
#define TENSORD_CLIENT_PENDING_FRAME_H_

#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "google/protobuf/arena.h"
#include "proto/packed_commands.h"
#include "proto/tensord.pb.h"
#include "runtime/core/block_cache.h"

namespace tensord {
inline namespace client {
namespace internal {

class PendingFrame {
 public:
  PendingFrame() { Start(); }

  v1::ClientFrame* operator->() { return frame_; }
  const v1::ClientFrame& operator*() const { return *frame_; }
  // The commands in the frame, each entry of a packed run counted.
  int size() const { return commands_; }
  // The seq of the last command in the frame (0: none).
  uint64_t last_seq() const {
    const auto& commands = frame_->batch().commands();
    return commands.empty() ? 0 : packed::LastSeq(*commands.rbegin());
  }

  // A new Command message at the end of the frame.
  v1::Command* Add() {
    ++commands_;
    return frame_->mutable_batch()->add_commands();
  }
  // Command `seq` as an entry of a packed run (Note [Packed commands] in
  // proto/tensord.proto), `write` appending its encoding: onto the run at
  // the frame's end when `seq` follows it, else a new run.
  void AddPacked(uint64_t seq, absl::FunctionRef<void(std::string*)> write) {
    auto* commands = frame_->mutable_batch()->mutable_commands();
    v1::Command* run = commands->empty() ? nullptr : &*commands->rbegin();
    if (run == nullptr || !run->has_packed() ||
        packed::LastSeq(*run) + 1 != seq) {
      run = frame_->mutable_batch()->add_commands();
      run->set_seq(seq);
    }
    v1::Packed* p = run->mutable_packed();
    write(p->mutable_entries());
    p->set_count(p->count() + 1);
    ++commands_;
  }

  // The frame filled so far, owning its arena; an empty one takes its place.
  std::shared_ptr<const v1::ClientFrame> Take() {
    std::shared_ptr<const v1::ClientFrame> taken(arena_, frame_);
    Start();
    return taken;
  }

 private:
  void Start() {
    commands_ = 0;
    arena_ = std::make_shared<google::protobuf::Arena>(FrameArenaOptions());
    frame_ =
        google::protobuf::Arena::CreateMessage<v1::ClientFrame>(arena_.get());
  }

  std::shared_ptr<google::protobuf::Arena> arena_;
  v1::ClientFrame* frame_ = nullptr;  // on arena_
  int commands_ = 0;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_PENDING_FRAME_H_
