// Call sites bound to ids on the daemon (Note [Site ids] in
// server/call_sites.cc): the first Call from a source line sends its text
// with a new id, later ones the id alone. The daemon binds at most
// kMaxSiteIds per session: lines past those send their text with every
// Call. Keyed by __builtin_FILE pointer and line (client/site.h).
//
// Thread-compatible: the session guards it (enqueue_mu_).
#ifndef TENSORD_CLIENT_SITE_IDS_H_
#define TENSORD_CLIENT_SITE_IDS_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "client/site.h"

namespace tensord {
inline namespace client {
namespace internal {

class SiteIds {
 public:
  static constexpr size_t kMaxSiteIds = size_t{1} << 16;

  // What the next Call from `site` sends: `site_id` (0: none), whether the
  // Call binds it (`bind`: bound once the Call is queued, by Bound), and
  // whether it carries the site's text (`text`).
  struct Choice {
    uint32_t site_id = 0;
    bool bind = false;
    bool text = false;
  };
  Choice Choose(const Site& site) const;
  // The Call binding `site_id` to `site` was queued.
  void Bound(const Site& site, uint32_t site_id);

 private:
  absl::flat_hash_map<std::pair<const char*, int>, uint32_t> ids_;
};

}  // namespace internal
}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SITE_IDS_H_
