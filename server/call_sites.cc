#include "server/call_sites.h"

#include "absl/strings/str_cat.h"
#include "server/wire_limits.h"

namespace tensord {

// Note [Site ids]: a Call names its client call site for error messages and
// the profiler. The text repeats on every op of a loop, so a client may bind
// it to a small id once (`site` and `site_id` together) and send only the
// id afterwards: no string to encode, parse and keep per op. Bindings live
// as long as the session; a resent command rebinds to the same text.
absl::StatusOr<CallSites::SiteText> CallSites::Resolve(
    uint32_t site_id, const std::string& site) {
  if (site_id == 0) return Inline(site);
  auto it = sites_.find(site_id);
  if (!site.empty()) {
    if (it != sites_.end() && *it->second == site) return it->second;
    const size_t replaced = it == sites_.end() ? 0 : it->second->size();
    if (it == sites_.end() && sites_.size() >= kMaxBoundSites) {
      return absl::InvalidArgumentError(
          absl::StrCat("site id ", site_id, ": a session may bind at most ",
                       kMaxBoundSites, " call sites"));
    }
    if (site_bytes_ - replaced + site.size() > kMaxBoundSiteBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "site id ", site_id, ": a session may bind at most ",
          kMaxBoundSiteBytes,
          " bytes of call-site text in all "
          "(server/wire_limits.h); send long sites without an id"));
    }
    site_bytes_ = site_bytes_ - replaced + site.size();
    auto text = std::make_shared<const std::string>(site);
    if (it == sites_.end()) {
      it = sites_.emplace(site_id, std::move(text)).first;
    } else {
      it->second = std::move(text);  // nodes keep the old text they name
    }
    return it->second;
  }
  if (it == sites_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "site id ", site_id,
        " was never bound in this session (send its text with the id "
        "first)"));
  }
  return it->second;
}

CallSites::SiteText CallSites::Inline(const std::string& text) {
  static const SiteText* const kNoSite =
      new SiteText(std::make_shared<const std::string>());
  if (text.empty()) return *kNoSite;
  // A loop sends the same text op after op: kept once, not per op.
  if (inline_site_ == nullptr || *inline_site_ != text) {
    inline_site_ = std::make_shared<const std::string>(text);
  }
  return inline_site_;
}

}  // namespace tensord
