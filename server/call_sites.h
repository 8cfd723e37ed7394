// CallSites: a session's call-site texts (Note [Site ids]): the texts bound
// to ids, within the caps of server/wire_limits.h, and the last text sent
// inline, each kept once and shared (never copied) by whatever names it.
//
// Thread-compatible: owned by the session's CommandRunner.
#ifndef TENSORD_SERVER_CALL_SITES_H_
#define TENSORD_SERVER_CALL_SITES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace tensord {

class CallSites {
 public:
  using SiteText = std::shared_ptr<const std::string>;

  // The call site a Call names: `site`, binding `site_id` to it when both
  // are set (id 0: no binding), or the text `site_id` was bound to. Never
  // null; shared, not copied, by whatever keeps it (Note [Wire limits]).
  // INVALID_ARGUMENT for an id never bound or past the session's caps
  // (kMaxBoundSites, kMaxBoundSiteBytes).
  absl::StatusOr<SiteText> Resolve(uint32_t site_id, const std::string& site);
  // A site sent as text (a Call without an id, a Put, a Backward), kept
  // once while the same text repeats: what AllocContext::site points at
  // (Note [Memory history]).
  SiteText Inline(const std::string& text);

 private:
  // Each bound text once, and their bytes in all.
  absl::flat_hash_map<uint32_t, SiteText> sites_;
  size_t site_bytes_ = 0;
  SiteText inline_site_;  // the last text sent with site_id 0, kept once
};

}  // namespace tensord

#endif  // TENSORD_SERVER_CALL_SITES_H_
