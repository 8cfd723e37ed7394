// Cross-memory attach (docs/protocol.md "Cross-memory attach"; the daemon's
// side is server/cma.h): the daemon copies a Put's bytes straight out of
// this process's memory and a Get's straight into it, once. The paths
// themselves are UploadInPlace and DownloadInPlace (session_shared.cc);
// here is only the probe that decides whether they may be used (its state
// and the binding are client/cma_probe.h).
#include <algorithm>
#include <cstdint>

#include "client/session.h"

namespace tensord {
inline namespace client {
namespace internal {

bool Session::DaemonCaughtUp() const {
  MutexLock lock(&mu_);
  return std::max(acked_seq_, requests_.answered_seq()) + 1 >=
         batch_.next_seq();
}

bool Session::CmaUsable() {
  return cma_.Usable(welcome_.cma() && shm_ != nullptr, [this] {
    // Bound is not enough: the kernel may still refuse the daemon's copies
    // (Yama's ptrace_scope, a seccomp policy without process_vm_readv): a
    // 4-byte round trip decides, so that a refusal costs a fallback here
    // instead of a failed upload later. The
    // probe is a Get, whose failure is its own answer: a refused Put would
    // poison its handle and be the next Sync's error.
    const float sent = 1.25f;
    float back = 0.0f;
    absl::StatusOr<uint64_t> handle =
        EnqueueUpload(&sent, DType::kFloat32, {1}, "cpu", false, "");  // stream
    if (!handle.ok()) return false;
    absl::StatusOr<HostTensor> got = DownloadInPlace(
        *handle, "", DType::kFloat32, sizeof(back),
        DownloadTarget{reinterpret_cast<char*>(&back), sizeof(back)},
        [&](v1::Get* get) {
          get->mutable_into()->mutable_cma()->set_address(
              reinterpret_cast<uint64_t>(&back));
        });
    QueueRelease(*handle);
    return got.ok() && back == sent;
  });
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
