#include "client/site_ids.h"

namespace tensord {
inline namespace client {
namespace internal {

SiteIds::Choice SiteIds::Choose(const Site& site) const {
  Choice c;
  if (site.file != nullptr && *site.file != '\0') {
    auto it = ids_.find({site.file, site.line});
    if (it != ids_.end()) {
      c.site_id = it->second;
    } else if (ids_.size() < kMaxSiteIds) {
      c.bind = true;
      c.site_id = static_cast<uint32_t>(ids_.size() + 1);
    }
    c.text = c.site_id == 0 || c.bind;
  }
  return c;
}

void SiteIds::Bound(const Site& site, uint32_t site_id) {
  ids_.emplace(std::make_pair(site.file, site.line), site_id);
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
