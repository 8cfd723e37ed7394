// Note [Client fallbacks]: counts of the ops a session's client ran itself
// instead of as daemon ops (the PyTorch device's CPU fallback, which
// downloads the inputs, runs PyTorch on the client and uploads the
// results), as the client reports them with NoteFallbacks. The daemon cannot
// see a fallback; it only adds up what the client says, so the names are
// client text (escaped wherever they are shown: Note [Client text]).
//
// Bounded: each name is at most kMaxNameBytes (server/wire_limits.h checks
// it before the command runs) and a counter holds at most kMaxNames names;
// later names are added to kOtherOps, so a session holds a few tens of KiB
// of them at most, whatever it sends. Counts saturate at 2^64 - 1.
//
// Thread-safe: the executor adds, Admin (tensorctl sessions) and the
// profiler's readers read from other threads.
#ifndef TENSORD_SERVER_FALLBACK_COUNTS_H_
#define TENSORD_SERVER_FALLBACK_COUNTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/strings/string_view.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"

namespace tensord {

class FallbackCounts {
 public:
  static constexpr size_t kMaxNames = 256;
  static constexpr char kOtherOps[] = "(other ops)";

  // Adds `count` to `op` (to kOtherOps once kMaxNames names are held).
  void Add(absl::string_view op, uint64_t count);
  // Every name and its count, sorted by name.
  std::map<std::string, uint64_t> Counts() const;
  // Appends one FallbackCount per name, sorted by name.
  void AppendTo(
      google::protobuf::RepeatedPtrField<v1::FallbackCount>* out) const;
  void Clear();

 private:
  mutable Mutex mu_;
  std::map<std::string, uint64_t, std::less<>> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_SERVER_FALLBACK_COUNTS_H_
