// The entries of a Command.packed run (Note [Packed commands] in
// proto/tensord.proto; docs/protocol.md "Packed commands").
//
// A run's `entries` are the commands one after another, each a sequence of
// unsigned LEB128 varints (as protobuf encodes uint64):
//   Call:    1, op_id, site_id, n, n input handles, m, m output handles
//   Release: 2, n, n handles
// `site_id` is 0 or an id bound earlier (Note [Site ids]). Nothing else is
// in the bytes: no lengths, no padding.
//
// Ack.packed_created (Note [Packed metas]) holds created handles' metadata
// the same way, one after another:
//   handle, dtype (the DType enum value), device (an index into
//   Welcome.devices), flags (1: requires_grad, 2: is_leaf), n, n dims A decoder
//   checks every count against
// the bytes left, so a hostile run cannot make it allocate more than its own
// size.
#ifndef TENSORD_PROTO_PACKED_COMMANDS_H_
#define TENSORD_PROTO_PACKED_COMMANDS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/tensord.pb.h"

namespace tensord {
namespace packed {

// The seq of the last command `cmd` stands for: Command.seq, or for a
// packed run of `count` commands seq + count - 1.
inline uint64_t LastSeq(const v1::Command& cmd) {
  return cmd.has_packed() && cmd.packed().count() > 1
             ? cmd.seq() + cmd.packed().count() - 1
             : cmd.seq();
}

// The commands `cmd` stands for: a packed run's count (at least 1), else 1.
inline uint32_t CommandCount(const v1::Command& cmd) {
  return cmd.has_packed() && cmd.packed().count() > 1 ? cmd.packed().count()
                                                      : 1;
}

enum class Kind : uint64_t { kCall = 1, kRelease = 2 };

// Appends one entry to `out`.
void AppendCall(uint32_t op_id, uint32_t site_id,
                absl::Span<const uint64_t> inputs,
                absl::Span<const uint64_t> outputs, std::string* out);
void AppendRelease(absl::Span<const uint64_t> handles, std::string* out);

// Upper bounds of those encodings, in bytes.
size_t CallBytes(size_t inputs, size_t outputs);
size_t ReleaseBytes(size_t handles);

// A created handle's metadata in Ack.packed_created.
inline constexpr uint32_t kRequiresGrad = 1;
inline constexpr uint32_t kIsLeaf = 2;
struct Meta {
  uint64_t handle = 0;
  uint32_t dtype = 0;               // v1::DType
  uint32_t device = 0;              // index into Welcome.devices
  uint32_t flags = 0;               // kRequiresGrad | kIsLeaf
  absl::Span<const int64_t> shape;  // decoded: valid until the next NextMeta
};
void AppendMeta(const Meta& meta, std::string* out);

// One decoded entry. The spans point into the Reader: valid until its next
// Next().
struct Entry {
  Kind kind = Kind::kCall;
  uint32_t op_id = 0;                  // Call
  uint32_t site_id = 0;                // Call
  absl::Span<const uint64_t> inputs;   // Call
  absl::Span<const uint64_t> outputs;  // Call
  absl::Span<const uint64_t> handles;  // Release
};

// Reads the entries of one run in order. Thread-compatible.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  bool done() const { return pos_ == bytes_.size(); }
  // Byte offset of the next entry in the run.
  size_t offset() const { return pos_; }

  // Decodes the entry at offset() into `entry`. INVALID_ARGUMENT, naming the
  // byte and what was wrong, for a truncated entry, an unknown kind, a count
  // larger than the bytes left, or a value out of its field's range; the
  // reader is then stuck at that entry.
  absl::Status Next(Entry* entry);
  // The same for the entries of Ack.packed_created; a negative dim (over
  // 2^63) or a dtype, device or flags value over 32 bits is an error.
  absl::Status NextMeta(Meta* meta);

 private:
  // One varint at pos_, advancing past it; false when it is truncated or
  // over 64 bits. One-byte values (most handles' low bits, kinds, counts)
  // take the inline path.
  bool Varint(uint64_t* value) {
    if (pos_ < bytes_.size() && static_cast<uint8_t>(bytes_[pos_]) < 0x80) {
      *value = static_cast<uint8_t>(bytes_[pos_++]);
      return true;
    }
    return VarintSlow(value);
  }
  bool VarintSlow(uint64_t* value);
  absl::Status Handles(const char* what, absl::InlinedVector<uint64_t, 4>* out);

  absl::string_view bytes_;
  size_t pos_ = 0;
  absl::InlinedVector<uint64_t, 4> first_;
  absl::InlinedVector<uint64_t, 4> second_;
  absl::InlinedVector<int64_t, 6> dims_;
};

}  // namespace packed
}  // namespace tensord

#endif  // TENSORD_PROTO_PACKED_COMMANDS_H_
