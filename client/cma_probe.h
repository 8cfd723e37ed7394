// Whether a C++ client session may use cross-memory attach
// (docs/protocol.md "Cross-memory attach"; the daemon's side is
// server/cma.h): the probe this process offers in its Hello (its pid and the
// address of a buffer that holds the region's nonce once the region is
// mapped, which the daemon reads to check that it may reach this process),
// and the outcome of the one probe transfer that decides (tried once, by the
// first transfer big enough for the path; client/session_cma.cc).
//
// Ownership: a member of Session; the probe buffer lives as long as it.
// Thread safety: Offer and ProveMapped run once, in Session::Open, before
// any other call; Usable is thread-safe. Lock order (client/session.h):
// Usable runs the probe holding mu(), which is taken before the Session's
// shm_mu_ and enqueue_mu_ (the probe transfers through the session).
#ifndef TENSORD_CLIENT_CMA_PROBE_H_
#define TENSORD_CLIENT_CMA_PROBE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "client/options.h"
#include "proto/tensord.pb.h"
#include "runtime/core/mutex.h"

namespace tensord {
inline namespace client {
namespace internal {

class CmaProbe {
 public:
  // From this size an upload from, or a download into, plain memory goes by
  // cross-memory attach when it works (below it the Put's wait for its Ack
  // costs more than the copy it saves).
  static constexpr uint64_t kMinBytes = 1 << 20;

  // Whether a client with `options` offers it: ClientOptions::cma and
  // $TENSORD_CMA not "0" (and only with a region: the caller's to check).
  static bool Wanted(const ClientOptions& options);

  // Names this process and the probe buffer in `hello` (Hello.cma_pid,
  // cma_probe_address).
  void Offer(v1::Hello* hello);
  // The region is mapped: copies its `nonce` to the probe buffer, which
  // proves that to the daemon. Nothing when not offered or too long.
  void ProveMapped(const std::string& nonce);

  // True when transfers may go by cross-memory attach: offered, in the
  // process that offered it (not a forked child, whose pid the daemon was
  // not told), `allowed` (Welcome.cma, with a region mapped) and `probe`
  // returned true. `probe` runs at most once, holding mu(); its outcome
  // stands for the session's life.
  bool Usable(bool allowed, absl::FunctionRef<bool()> probe)
      ABSL_LOCKS_EXCLUDED(mu_);

  Mutex* mu() ABSL_LOCK_RETURNED(mu_) { return &mu_; }

 private:
  enum class State { kUnknown, kWorks, kOff };
  static constexpr size_t kProbeBytes = 64;

  // Set once by Offer (null: not offered).
  std::unique_ptr<char[]> probe_;
  uint64_t pid_ = 0;  // Hello.cma_pid

  Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kUnknown;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_CMA_PROBE_H_
