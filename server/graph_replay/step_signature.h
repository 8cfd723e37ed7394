// A step's command sequence up to renaming of its fresh handles: what Note
// [Graph replay] (replay_tracker.h) compares to tell that a session repeats
// a training step.
//
// Every handle a command names gets a role:
//   fresh(k)     made by the k-th output (or Put, or GetGrad) of this step;
//   previous(k)  made by the k-th output of the step before (an activation
//                released late, last step's loss);
//   fixed(id)    anything older, by its id (parameters, optimizer state):
//                the same handle in the same position, plus its metadata
//                (dtype, shape, device, requires_grad) at that point.
// The signature holds each command's kind, its role-renamed handles and its
// other fields (op, attributes in key order, shapes of Puts, flags), never
// the bytes of data, request ids, call sites or seqs. Two steps with equal
// signatures run the same ops on the same shapes in the same order.
//
// Thread-compatible: owned by one session's executor.
#ifndef TENSORD_SERVER_GRAPH_REPLAY_STEP_SIGNATURE_H_
#define TENSORD_SERVER_GRAPH_REPLAY_STEP_SIGNATURE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/map.h"
#include "proto/tensord.pb.h"

namespace tensord {

// Caps what one step's signature may hold (Note [Wire limits]: bounded per
// session): a longer step is not a replay candidate and stops being recorded.
inline constexpr size_t kMaxStepCommands = 1 << 16;
inline constexpr size_t kMaxStepSignatureBytes = 4 << 20;

// What the signature needs to know of a handle older than the step.
class HandleMetaSource {
 public:
  virtual ~HandleMetaSource() = default;
  // Appends the handle's dtype, shape, device and requires_grad (or that it
  // is unknown, None or poisoned) to `out`.
  virtual void AppendMeta(uint64_t id, std::string* out) const = 0;
  // The address of its storage's bytes (null when it has none): a captured
  // graph baked it in (Note [Graph replay]).
  virtual const void* StorageOf(uint64_t id) const = 0;
};

// A fixed handle the step reads and the storage it had.
struct FixedBinding {
  uint64_t id = 0;
  const void* storage = nullptr;
  bool operator==(const FixedBinding& o) const {
    return id == o.id && storage == o.storage;
  }
};

struct StepSignature {
  std::string bytes;  // the canonical form; equal bytes: the same step
  size_t commands = 0;
  // False when a command that cannot be captured is in it (events, shared
  // buffers, profiles) or it passed the caps above.
  bool capturable = true;
  std::vector<FixedBinding> fixed;  // in first-use order, each id once
};

class StepSignatureBuilder {
 public:
  explicit StepSignatureBuilder(const HandleMetaSource* meta) : meta_(meta) {}

  // Adds one command (each entry of a packed run, in order).
  void Add(const v1::Command& cmd);
  using AttrMap = google::protobuf::Map<std::string, v1::AttrValue>;
  // A Call (`attrs` null: none, as in a packed entry).
  void AddCall(uint32_t op_id, absl::Span<const uint64_t> inputs,
               const AttrMap* attrs, absl::Span<const uint64_t> outputs);
  void AddRelease(absl::Span<const uint64_t> handles);
  // Ends the step: its signature; this step's fresh handles become the next
  // one's previous ones.
  StepSignature Finish();

  // The canonical bytes of the step so far (for matching a prefix).
  absl::string_view bytes() const { return current_.bytes; }
  size_t commands() const { return current_.commands; }

 private:
  void Begin(char kind);
  void Role(uint64_t id);  // an existing handle's role
  void Fresh(uint64_t id);
  void Opaque(char kind);  // a command that cannot be captured
  void Int(uint64_t v);
  void Text(absl::string_view s);

  const HandleMetaSource* meta_;
  StepSignature current_;
  bool full_ = false;
  absl::flat_hash_map<uint64_t, uint32_t> fresh_;
  absl::flat_hash_map<uint64_t, uint32_t> previous_;
  absl::flat_hash_map<uint64_t, bool> fixed_seen_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_GRAPH_REPLAY_STEP_SIGNATURE_H_
