// Cross-memory attach's binding socket (docs/protocol.md "Cross-memory
// attach"; server/cma.h): a unix-domain socket in Linux's abstract namespace
// with a random name ("@tensord-cma-" and 32 hex digits, announced in every
// Welcome that offers the path). A client process connects and sends
// kCmaBindMagic and its session's Welcome.cma_ticket (proto/cma_bind.h),
// read through a HelloAcceptor (2 s each, 64 at once); the daemon takes the
// connecting process from the kernel (PeerProcess::OfSocket), binds the
// session holding the ticket to it, and answers one byte, kCmaBound or
// kCmaRefused (the same byte whatever the reason: unknown ticket, another
// user, the daemon itself), then closes. Reasons go to the daemon's log,
// rate limited (Note [Rate-limited logs]): anyone on the host may connect.
//
// The abstract namespace has no file to leave behind or to race on;
// anyone in the daemon's network namespace may connect, which is safe
// because the kernel, not the connection's bytes, says who connected.
//
// Thread safety: its acceptor runs its own thread; `bind` is called on it.
#ifndef TENSORD_SERVER_CMA_BINDER_H_
#define TENSORD_SERVER_CMA_BINDER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/hello_acceptor.h"
#include "server/log_rate_limit.h"
#include "server/peer_process.h"

namespace tensord {

class CmaBinder {
 public:
  // Binds the session holding `ticket` to `peer`: OK, or why not.
  using Bind = std::function<absl::Status(absl::string_view ticket,
                                          absl::StatusOr<PeerProcess> peer)>;

  // Listens on a fresh random abstract name until destroyed.
  static absl::StatusOr<std::unique_ptr<CmaBinder>> Start(Bind bind);
  CmaBinder(const CmaBinder&) = delete;
  CmaBinder& operator=(const CmaBinder&) = delete;

  // Welcome.cma_socket: "@" and the abstract name.
  const std::string& name() const { return name_; }

 private:
  CmaBinder(std::string name, Bind bind)
      : name_(std::move(name)), bind_(std::move(bind)) {}
  // Answers and closes `fd`, whose complete hello is `hello`.
  void Admit(int fd, absl::string_view hello);

  const std::string name_;
  const Bind bind_;
  LogRateLimit refusal_log_{10};  // lines a minute about refused bindings
  std::unique_ptr<HelloAcceptor> acceptor_;  // last: its thread uses the rest
};

}  // namespace tensord

#endif  // TENSORD_SERVER_CMA_BINDER_H_
