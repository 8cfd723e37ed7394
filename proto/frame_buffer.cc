#include "proto/frame_buffer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "grpc/slice.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"

namespace tensord {
namespace {

// Copied bytes go into blocks of at most this size, so a field at least this
// large never fits the block being filled and is aliased; a message without
// large fields is one block of its exact size when it is this small.
constexpr size_t kMaxBlockBytes = 64 << 10;

void ReleaseOwner(void* owner) {
  delete static_cast<std::shared_ptr<const void>*>(owner);
}

// The slices of one serialisation: blocks for copied bytes, and slices into
// the message's strings for what protobuf hands to WriteAliasedRaw.
class SliceOutputStream final
    : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  SliceOutputStream(std::shared_ptr<const void> owner, size_t total)
      : owner_(std::move(owner)), total_(total) {}
  ~SliceOutputStream() override {
    if (has_block_) grpc_slice_unref(block_);
  }

  bool Next(void** data, int* size) override {
    CloseBlock();
    // What is left to write bounds the copied bytes still to come, so the
    // last block is no larger than the message's tail.
    const size_t left = total_ > count_ ? total_ - count_ : 0;
    const size_t n = std::clamp(left, size_t{64}, kMaxBlockBytes);
    block_ = grpc_slice_malloc(n);
    has_block_ = true;
    *data = GRPC_SLICE_START_PTR(block_);
    *size = static_cast<int>(n);
    count_ += n;
    return true;
  }
  void BackUp(int count) override {
    backed_up_ += static_cast<size_t>(count);
    count_ -= static_cast<size_t>(count);
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(count_); }
  bool AllowsAliasing() const override { return true; }
  bool WriteAliasedRaw(const void* data, int size) override {
    CloseBlock();
    if (size > 0) {
      slices_.emplace_back(const_cast<void*>(data), static_cast<size_t>(size),
                           &ReleaseOwner,
                           new std::shared_ptr<const void>(owner_));
      count_ += static_cast<size_t>(size);
    }
    return true;
  }

  grpc::ByteBuffer Finish() {
    CloseBlock();
    return grpc::ByteBuffer(slices_.data(), slices_.size());
  }

 private:
  // Moves the filled part of the current block into slices_.
  void CloseBlock() {
    if (!has_block_) return;
    has_block_ = false;
    const size_t length = GRPC_SLICE_LENGTH(block_);
    const size_t used = length - backed_up_;
    backed_up_ = 0;
    if (used == length) {
      slices_.emplace_back(block_, grpc::Slice::STEAL_REF);
      return;
    }
    if (used > 0) {
      slices_.emplace_back(grpc_slice_sub(block_, 0, used),
                           grpc::Slice::STEAL_REF);
    }
    grpc_slice_unref(block_);
  }

  const std::shared_ptr<const void> owner_;
  const size_t total_;
  size_t count_ = 0;  // bytes written, aliased ones included
  std::vector<grpc::Slice> slices_;
  grpc_slice block_;
  bool has_block_ = false;
  size_t backed_up_ = 0;  // of block_
};

}  // namespace

grpc::ByteBuffer SerializeAliased(
    std::shared_ptr<const google::protobuf::MessageLite> message) {
  const size_t total = message->ByteSizeLong();  // caches the sizes
  const google::protobuf::MessageLite& m = *message;
  SliceOutputStream out(std::move(message), total);
  {
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.EnableAliasing(true);
    m.SerializeWithCachedSizes(&coded);
  }  // trims the last block
  return out.Finish();
}

bool ParseFromByteBuffer(grpc::ByteBuffer* buffer,
                         google::protobuf::MessageLite* message) {
  bool ok;
  {
    grpc::ProtoBufferReader reader(buffer);
    ok = reader.status().ok() && message->ParseFromZeroCopyStream(&reader) &&
         reader.status().ok();
  }
  buffer->Clear();
  return ok;
}

}  // namespace tensord
