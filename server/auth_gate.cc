#include "server/auth_gate.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tensord {

absl::Status AuthGate::Admit(absl::string_view peer) {
  const std::string host = AuthFailures::PeerHost(peer);
  MutexLock lock(&mu_);
  if (waiting_ >= guards_.max_unauthenticated) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tensord has ", guards_.max_unauthenticated,
                     " connections waiting to authenticate (its "
                     "--max_unauthenticated_streams); try again shortly"));
  }
  int& from_host = per_host_[host];
  if (from_host >= guards_.max_unauthenticated_per_host) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "tensord has ", from_host,
        " connections from this host waiting to authenticate (its "
        "--max_unauthenticated_streams_per_host); try again shortly"));
  }
  ++from_host;
  ++waiting_;
  return absl::OkStatus();
}

void AuthGate::Leave(absl::string_view peer) {
  const std::string host = AuthFailures::PeerHost(peer);
  MutexLock lock(&mu_);
  --waiting_;
  auto it = per_host_.find(host);
  if (it != per_host_.end() && --it->second <= 0) per_host_.erase(it);
}

size_t AuthGate::waiting() const {
  MutexLock lock(&mu_);
  return static_cast<size_t>(waiting_);
}

void AuthGate::RefuseLater(absl::string_view what, absl::string_view peer,
                           const absl::Status& refusal,
                           std::function<void()> refuse) {
  const AuthFailures::Verdict verdict = failures_.Record(peer);
  if (verdict.log) {
    spdlog::warn("{} failed from {} (answered in {}){}: {}", std::string(what),
                 std::string(peer), absl::FormatDuration(verdict.delay),
                 verdict.suppressed == 0
                     ? ""
                     : absl::StrCat("; ", verdict.suppressed,
                                    " more failures not logged"),
                 std::string(refusal.message()));
  }
  timers_.Schedule(absl::Now() + verdict.delay, std::move(refuse));
}

}  // namespace tensord
