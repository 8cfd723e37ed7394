#include "proto/cma_bind.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tensord {
namespace {

// Sends all `n` bytes or fails.
bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t sent = send(fd, p, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    p += sent;
    n -= static_cast<size_t>(sent);
  }
  return true;
}

}  // namespace

bool ParseCmaBindHello(std::string_view hello, std::string_view* ticket) {
  if (hello.size() != kCmaBindHelloBytes) return false;
  if (hello.substr(0, kCmaBindMagicBytes) !=
      std::string_view(kCmaBindMagic, kCmaBindMagicBytes)) {
    return false;
  }
  *ticket = hello.substr(kCmaBindMagicBytes);
  return true;
}

bool CmaBindThisProcess(const std::string& socket_name,
                        const std::string& ticket, int timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_name.empty() || socket_name.size() >= sizeof(addr.sun_path) ||
      ticket.size() != kCmaTicketBytes) {
    return false;
  }
  std::memcpy(addr.sun_path, socket_name.data(), socket_name.size());
  const bool abstract = socket_name[0] == '@';
  if (abstract) addr.sun_path[0] = '\0';  // unterminated: length says
  const socklen_t len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                             socket_name.size() + (abstract ? 0 : 1));
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // A unix connect waits for room in the listener's backlog up to the send
  // timeout: bounded too.
  timeval limit{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  char hello[kCmaBindHelloBytes];
  std::memcpy(hello, kCmaBindMagic, kCmaBindMagicBytes);
  std::memcpy(hello + kCmaBindMagicBytes, ticket.data(), kCmaTicketBytes);
  char answer = 0;
  bool bound = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      SendAll(fd, hello, sizeof(hello))) {
    pollfd p{fd, POLLIN, 0};
    int ready;
    do {
      ready = poll(&p, 1, timeout_ms);
    } while (ready < 0 && errno == EINTR);
    bound = ready == 1 && recv(fd, &answer, 1, 0) == 1 && answer == kCmaBound;
  }
  close(fd);
  return bound;
}

}  // namespace tensord
