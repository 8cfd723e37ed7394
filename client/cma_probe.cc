// Cross-memory attach's binding and its outcome. See client/cma_probe.h.
#include "client/cma_probe.h"

#include <unistd.h>

#include "proto/cma_bind.h"

namespace tensord {
inline namespace client {
namespace internal {

void CmaProbe::Bind(bool wanted, const v1::Welcome& welcome) {
  if (!wanted || !welcome.cma()) return;
  pid_ = static_cast<uint64_t>(getpid());
  bound_.store(CmaBindThisProcess(welcome.cma_socket(), welcome.cma_ticket(),
                                  kBindTimeoutMs));
}

void CmaProbe::Rebind(const v1::Welcome& welcome) {
  if (pid_ == 0 || static_cast<uint64_t>(getpid()) != pid_) return;
  bound_.store(welcome.cma() &&
               CmaBindThisProcess(welcome.cma_socket(), welcome.cma_ticket(),
                                  kBindTimeoutMs));
}

bool CmaProbe::Usable(bool allowed, absl::FunctionRef<bool()> probe) {
  // A forked child still holds this session: the daemon would read and
  // write the parent, the process bound to it.
  if (!bound_.load() || static_cast<uint64_t>(getpid()) != pid_) {
    return false;
  }
  MutexLock lock(&mu_);
  if (state_ != State::kUnknown) return state_ == State::kWorks;
  state_ = State::kOff;
  if (!allowed) return false;
  if (probe()) state_ = State::kWorks;
  return state_ == State::kWorks;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
