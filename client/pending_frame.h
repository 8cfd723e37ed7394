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

#include "google/protobuf/arena.h"
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
  int size() const { return frame_->batch().commands_size(); }

  // The frame filled so far, owning its arena; an empty one takes its place.
  std::shared_ptr<const v1::ClientFrame> Take() {
    std::shared_ptr<const v1::ClientFrame> taken(arena_, frame_);
    Start();
    return taken;
  }

 private:
  void Start() {
    arena_ = std::make_shared<google::protobuf::Arena>(FrameArenaOptions());
    frame_ =
        google::protobuf::Arena::CreateMessage<v1::ClientFrame>(arena_.get());
  }

  std::shared_ptr<google::protobuf::Arena> arena_;
  v1::ClientFrame* frame_ = nullptr;  // on arena_
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_PENDING_FRAME_H_
