// A client session's unsent commands and releases. See
// client/command_batch.h.
#include "client/command_batch.h"

#include "proto/packed_commands.h"

namespace tensord {
inline namespace client {
namespace internal {

uint64_t CommandBatch::Add(size_t size,
                           absl::FunctionRef<void(v1::Command*)> fill,
                           const PackFn* pack) {
  const uint64_t seq = next_seq_++;
  if (empty()) opened_ = absl::Now();  // the batch_delay starts now
  if (pack != nullptr && packed_) {
    frame_.AddPacked(seq, *pack);
  } else {
    v1::Command* command = frame_.Add();
    fill(command);
    command->set_seq(seq);
  }
  bytes_ += size;
  return seq;
}

void CommandBatch::QueueRelease(uint64_t handle) {
  if (empty()) opened_ = absl::Now();
  releases_.push_back(handle);
}

void CommandBatch::MoveReleasesIn() {
  if (releases_.empty() || in_chunked_put_) return;
  const uint64_t seq = next_seq_++;
  if (packed_) {
    frame_.AddPacked(
        seq, [&](std::string* out) { packed::AppendRelease(releases_, out); });
  } else {
    v1::Command* command = frame_.Add();
    command->set_seq(seq);
    command->mutable_release()->mutable_handles()->Add(releases_.begin(),
                                                       releases_.end());
  }
  releases_.clear();
}

std::shared_ptr<const v1::ClientFrame> CommandBatch::Take(uint64_t acked_seq) {
  // The daemon may drop the replies up to here from its replay buffer.
  frame_->mutable_batch()->set_received_seq(acked_seq);
  bytes_ = 0;
  return frame_.Take();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
