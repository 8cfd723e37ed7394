// The bulk socket's connection: connect, hello, and exact sends and
// receives. See client/bulk_connection.h.
#include "client/bulk_connection.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "proto/bulk_socket.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

// Connects to host:port within `timeout`; -1 on failure.
int Connect(const std::string& host, uint32_t port, absl::Duration timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) !=
      0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd >= 0) {
    // Bounds the hello's answer; transfers themselves wait as long as the
    // daemon needs to reach their command.
    timeval tv{static_cast<time_t>(absl::ToInt64Seconds(timeout)), 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  return fd;
}

// Moves exactly `n` bytes; the count moved before a failure otherwise.
size_t SendAll(int fd, const char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = send(fd, p + done, n - done, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

size_t RecvAll(int fd, char* p, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = recv(fd, p + done, n - done, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

absl::Status Short(absl::string_view what, size_t done, size_t n) {
  return absl::UnavailableError(absl::StrCat(
      what, ": the bulk socket to tensord broke after ", done, " of ", n,
      " bytes", errno != 0 ? absl::StrCat(" (", strerror(errno), ")") : ""));
}

}  // namespace

bool BulkConnection::Wanted(const ClientOptions& options) {
  return Wanted(options.bulk, options.address);
}

bool BulkConnection::Wanted(bool enabled, const std::string& address) {
  const char* env = std::getenv("TENSORD_BULK");
  return enabled && (env == nullptr || std::string(env) != "0") &&
         !TcpHostOf(address).empty();
}

BulkConnection::BulkConnection(const ClientOptions& options, uint32_t port,
                               std::string token)
    : enabled_(options.bulk),
      address_(options.address),
      connect_timeout_(options.connect_timeout),
      port_(port),
      token_(std::move(token)) {}

BulkConnection::~BulkConnection() { Close(); }

bool BulkConnection::Usable() {
  MutexLock lock(&mu_);
  return UsableLocked();
}

bool BulkConnection::UsableLocked() {
  if (state_ != State::kUnknown) return state_ == State::kWorks;
  state_ = State::kOff;
  if (!Wanted(enabled_, address_) || port_ == 0 ||
      token_.size() != kBulkTokenBytes) {
    return false;
  }
  const int fd = Connect(TcpHostOf(address_), port_, connect_timeout_);
  if (fd < 0) return false;
  const std::string hello =
      absl::StrCat(absl::string_view(kBulkMagic, kBulkMagicBytes), token_);
  char answer = 0;
  if (SendAll(fd, hello.data(), hello.size()) != hello.size() ||
      RecvAll(fd, &answer, 1) != 1 || answer != kBulkAccepted) {
    close(fd);  // refused (e.g. the token was used): the stream serves
    return false;
  }
  timeval none{0, 0};  // transfers may wait for queued work: no timeout
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  fd_ = fd;
  state_ = State::kWorks;
  return true;
}

absl::Status BulkConnection::SendLocked(uint64_t handle, const char* data,
                                        size_t n) {
  errno = 0;
  return CheckMovedLocked("upload", handle, SendAll(fd_, data, n), n);
}

absl::Status BulkConnection::ReceiveLocked(uint64_t handle, char* data,
                                           size_t n) {
  errno = 0;
  return CheckMovedLocked("download", handle, RecvAll(fd_, data, n), n);
}

absl::Status BulkConnection::CheckMovedLocked(absl::string_view what,
                                              uint64_t handle, size_t moved,
                                              size_t n) {
  if (moved == n) return absl::OkStatus();
  absl::Status error =
      Short(absl::StrCat(what, " of handle ", handle), moved, n);
  DropLocked();
  return error;
}

void BulkConnection::DropLocked() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  state_ = State::kOff;
}

void BulkConnection::Close() {
  MutexLock lock(&mu_);
  DropLocked();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
