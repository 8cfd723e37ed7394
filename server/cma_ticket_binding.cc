#include "server/cma_ticket_binding.h"

#include <memory>
#include <utility>

#include "spdlog/spdlog.h"

namespace tensord {

absl::Status BindCmaTicket(const SessionManager& sessions,
                           absl::string_view ticket,
                           absl::StatusOr<PeerProcess> peer) {
  std::shared_ptr<Session> session =
      sessions.FindIf([ticket](const Session& s) {
        return s.cma() != nullptr && s.cma()->HoldsTicket(ticket);
      });
  if (session == nullptr) {
    return absl::NotFoundError("no session holds the ticket");
  }
  const pid_t pid = peer.ok() ? peer->pid() : 0;
  absl::Status bound = session->cma()->Bind(ticket, std::move(peer));
  if (bound.ok()) {
    spdlog::info("session {}: cross-memory attach bound to process {}",
                 session->params().id, pid);
  }
  return bound;
}

}  // namespace tensord
