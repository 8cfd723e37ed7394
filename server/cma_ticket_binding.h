// Cross-memory attach's binding on the daemon's side (server/cma.h): the
// daemon's binding socket (server/cma_binder.h) hands each connection's
// ticket and the process the kernel named to BindCmaTicket, which binds the
// session holding that ticket to that process, once (a one-time ticket).
#ifndef TENSORD_SERVER_CMA_TICKET_BINDING_H_
#define TENSORD_SERVER_CMA_TICKET_BINDING_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/session_manager.h"

namespace tensord {

// Binds the session of `sessions` holding `ticket` to `peer`: OK, or why
// not (for the daemon's log; the client learns only that it is not bound).
// NOT_FOUND when no session holds the ticket. Thread-safe.
absl::Status BindCmaTicket(const SessionManager& sessions,
                           absl::string_view ticket,
                           absl::StatusOr<PeerProcess> peer);

}  // namespace tensord

#endif  // TENSORD_SERVER_CMA_TICKET_BINDING_H_
