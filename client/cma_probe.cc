// Cross-memory attach's probe and its outcome. See client/cma_probe.h.
#include "client/cma_probe.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace tensord {
inline namespace client {
namespace internal {

bool CmaProbe::Wanted(const ClientOptions& options) {
  const char* env = std::getenv("TENSORD_CMA");
  return options.cma && (env == nullptr || std::string(env) != "0");
}

void CmaProbe::Offer(v1::Hello* hello) {
  probe_ = std::make_unique<char[]>(kProbeBytes);  // zeroed
  pid_ = static_cast<uint64_t>(getpid());
  hello->set_cma_pid(pid_);
  hello->set_cma_probe_address(reinterpret_cast<uint64_t>(probe_.get()));
}

void CmaProbe::ProveMapped(const std::string& nonce) {
  if (probe_ != nullptr && nonce.size() <= kProbeBytes) {
    std::memcpy(probe_.get(), nonce.data(), nonce.size());
  }
}

bool CmaProbe::Usable(bool allowed, absl::FunctionRef<bool()> probe) {
  // A forked child still holds this session: the daemon would read and
  // write the parent, whose pid the Hello named.
  if (probe_ == nullptr || static_cast<uint64_t>(getpid()) != pid_) {
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
