#include "server/cma_binder.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "proto/cma_bind.h"
#include "runtime/core/status_macros.h"
#include "server/secure_random.h"
#include "spdlog/spdlog.h"

namespace tensord {

absl::StatusOr<std::unique_ptr<CmaBinder>> CmaBinder::Start(Bind bind) {
  TD_ASSIGN_OR_RETURN(std::string suffix, SecureRandomHex(16));
  const std::string name = absl::StrCat("tensord-cma-", suffix);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // Abstract: sun_path starts with a NUL and the name is not terminated.
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cross-memory attach: no unix socket: ", std::strerror(errno)));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd, 64) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("cross-memory attach: cannot listen on @", name, ": ",
                     std::strerror(err)));
  }
  std::unique_ptr<CmaBinder> binder(
      new CmaBinder(absl::StrCat("@", name), std::move(bind)));
  HelloAcceptor::Hooks hooks;
  hooks.hello_bytes = [](const char*, size_t) { return kCmaBindHelloBytes; };
  hooks.admit = [b = binder.get()](int conn, absl::string_view hello) {
    b->Admit(conn, hello);
  };
  TD_ASSIGN_OR_RETURN(
      binder->acceptor_,
      HelloAcceptor::Start(fd, "cma binding socket", std::move(hooks)));
  return binder;
}

void CmaBinder::Admit(int fd, absl::string_view hello) {
  absl::Status bound = absl::InvalidArgumentError("not a binding hello");
  std::string_view ticket;
  if (ParseCmaBindHello(std::string_view(hello.data(), hello.size()),
                        &ticket)) {
    bound = bind_(absl::string_view(ticket.data(), ticket.size()),
                  PeerProcess::OfSocket(fd));
  }
  // The same byte for every refusal: the connecting process learns only
  // that it was not bound.
  const char answer = bound.ok() ? kCmaBound : kCmaRefused;
  const bool answered = send(fd, &answer, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
  if (!bound.ok() || !answered) {
    const LogRateLimit::Line line = refusal_log_.Allow();
    if (line.log && !answered) {
      spdlog::info(
          "cma binding socket: the client went away before the "
          "answer{}",
          line.SuppressedNote());
    } else if (line.log) {
      spdlog::info("cma binding socket: a binding refused{}: {}",
                   line.SuppressedNote(), bound.ToString());
    }
  }
  close(fd);
}

}  // namespace tensord
