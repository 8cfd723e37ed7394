#include "server/auth_failures.h"

#include <algorithm>

#include "absl/strings/match.h"

namespace tensord {

std::string AuthFailures::PeerHost(absl::string_view peer) {
  if (!absl::StartsWith(peer, "ipv4:") && !absl::StartsWith(peer, "ipv6:")) {
    return std::string(peer);
  }
  const size_t colon = peer.rfind(':');
  return std::string(colon > 5 ? peer.substr(0, colon) : peer);
}

void AuthFailures::MakeRoom(absl::Time now) {
  if (peers_.size() < options_.max_peers) return;
  for (auto it = peers_.begin(); it != peers_.end();) {
    auto current = it++;
    if (now - current->second.last > options_.forget_after) {
      peers_.erase(current);
    }
  }
  // Still full: drop the host seen longest ago.
  while (peers_.size() >= options_.max_peers) {
    auto oldest = std::min_element(peers_.begin(), peers_.end(),
                                   [](const auto& a, const auto& b) {
                                     return a.second.last < b.second.last;
                                   });
    peers_.erase(oldest);
  }
}

AuthFailures::Verdict AuthFailures::Record(absl::string_view peer,
                                           absl::Time now) {
  const std::string host = PeerHost(peer);
  MutexLock lock(&mu_);
  auto it = peers_.find(host);
  if (it == peers_.end()) {
    MakeRoom(now);
    it = peers_.emplace(host, Entry()).first;
  }
  Entry& entry = it->second;
  if (now - entry.last > options_.forget_after) entry.failures = 0;
  entry.last = now;
  entry.failures = std::min(entry.failures + 1, 30);
  Verdict verdict;
  verdict.delay = std::min(options_.max_delay,
                           options_.base_delay * (1 << (entry.failures - 1)));
  const LogRateLimit::Line line = log_.Allow(now);
  verdict.log = line.log;
  verdict.suppressed = line.suppressed;
  return verdict;
}

size_t AuthFailures::peers() const {
  MutexLock lock(&mu_);
  return peers_.size();
}

}  // namespace tensord
