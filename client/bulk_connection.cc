// The bulk socket's connection: connect, hello, and exact sends and
// receives. See client/bulk_connection.h.
#include "client/bulk_connection.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

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

// One lane's part of a transfer: how far it got, and why it stopped.
struct LaneMove {
  size_t moved = 0;
  int error = 0;  // errno after a short move; 0: the peer closed
};

}  // namespace

bool BulkConnection::Wanted(const ClientOptions& options) {
  // A daemon serving TLS makes its lanes TLS too (server/bulk_tls.h); this
  // client's lanes speak plain TCP only, so a session with credentials keeps
  // every byte on its (secure) stream.
  return options.credentials == nullptr &&
         Wanted(options.bulk, options.address);
}

bool BulkConnection::Wanted(bool enabled, const std::string& address) {
  const char* env = std::getenv("TENSORD_BULK");
  return enabled && (env == nullptr || std::string(env) != "0") &&
         !TcpHostOf(address).empty();
}

BulkConnection::BulkConnection(const ClientOptions& options, uint32_t port,
                               std::string token, uint32_t lanes)
    : enabled_(options.bulk),
      address_(options.address),
      connect_timeout_(options.connect_timeout),
      port_(port),
      token_(std::move(token)),
      lanes_offered_(std::clamp<uint32_t>(lanes, 1, kBulkMaxLanes)),
      lanes_option_(options.bulk_lanes) {}

BulkConnection::~BulkConnection() { Close(); }

bool BulkConnection::Usable() {
  MutexLock lock(&mu_);
  return UsableLocked();
}

uint32_t BulkConnection::lanes() {
  MutexLock lock(&mu_);
  return lanes_locked();
}

uint32_t BulkConnection::LanesWanted() const {
  const uint32_t cap = lanes_option_;
  return cap == 0 ? lanes_offered_ : std::min(cap, lanes_offered_);
}

int BulkConnection::ConnectLane(uint32_t lane) const {
  const int fd = Connect(TcpHostOf(address_), port_, connect_timeout_);
  if (fd < 0) return -1;
  std::string hello =
      absl::StrCat(absl::string_view(lane == 0 ? kBulkMagic : kBulkLaneMagic,
                                     kBulkMagicBytes),
                   token_);
  if (lane != 0) hello.push_back(static_cast<char>(lane));
  char answer = 0;
  if (SendAll(fd, hello.data(), hello.size()) != hello.size() ||
      RecvAll(fd, &answer, 1) != 1 || answer != kBulkAccepted) {
    close(fd);  // refused (e.g. the token was used): the stream serves
    return -1;
  }
  timeval none{0, 0};  // transfers may wait for queued work: no timeout
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  return fd;
}

bool BulkConnection::UsableLocked() {
  if (state_ != State::kUnknown) return state_ == State::kWorks;
  state_ = State::kOff;
  if (!Wanted(enabled_, address_) || port_ == 0 ||
      token_.size() != kBulkTokenBytes) {
    return false;
  }
  const uint32_t wanted = LanesWanted();
  for (uint32_t lane = 0; lane < wanted; ++lane) {
    const int fd = ConnectLane(lane);
    if (fd < 0) break;  // the lanes before it serve
    fds_.push_back(fd);
  }
  if (fds_.empty()) return false;
  state_ = State::kWorks;
  return true;
}

absl::Status BulkConnection::SendLocked(uint64_t handle, const char* data,
                                        size_t n, uint32_t lanes) {
  // Sent, never written: the buffer is only read.
  return MoveLocked(true, handle, const_cast<char*>(data), n, lanes);
}

absl::Status BulkConnection::ReceiveLocked(uint64_t handle, char* data,
                                           size_t n, uint32_t lanes) {
  return MoveLocked(false, handle, data, n, lanes);
}

absl::Status BulkConnection::MoveLocked(bool upload, uint64_t handle,
                                        char* data, size_t n, uint32_t lanes) {
  lanes = std::max<uint32_t>(lanes, 1);
  const std::string what =
      absl::StrCat(upload ? "upload" : "download", " of handle ", handle);
  if (lanes > fds_.size()) {
    const size_t connected = fds_.size();
    DropLocked();
    return absl::InternalError(absl::StrCat(what, ": striped over ", lanes,
                                            " lanes of the bulk socket, but ",
                                            connected, " are connected"));
  }
  const std::vector<int> fds(fds_.begin(), fds_.begin() + lanes);
  std::vector<LaneMove> moves(lanes);
  std::atomic<bool> failed{false};
  auto run = [&](uint32_t lane) {
    const BulkLaneSpan span = BulkLane(n, lanes, lane);
    const size_t len = span.end - span.begin;
    errno = 0;
    moves[lane].moved = upload ? SendAll(fds[lane], data + span.begin, len)
                               : RecvAll(fds[lane], data + span.begin, len);
    if (moves[lane].moved == len) return;
    moves[lane].error = errno;
    // The other lanes may wait on a peer that gave up: wake them.
    if (!failed.exchange(true)) {
      for (int fd : fds) shutdown(fd, SHUT_RDWR);
    }
  };
  MoveLanesAtOnce(n, lanes, run);
  if (!failed.load()) return absl::OkStatus();
  DropLocked();
  // The first lane that fell short of its span says how far it got.
  auto complete = [&](uint32_t lane) {
    const BulkLaneSpan span = BulkLane(n, lanes, lane);
    return moves[lane].moved == span.end - span.begin;
  };
  uint32_t lane = 0;
  while (lane + 1 < lanes && complete(lane)) ++lane;
  const BulkLaneSpan span = BulkLane(n, lanes, lane);
  const LaneMove& m = moves[lane];
  const std::string where =
      lanes == 1 ? absl::StrCat("the bulk socket to tensord broke after ",
                                m.moved, " of ", n, " bytes")
                 : absl::StrCat("lane ", lane,
                                " of the bulk socket to tensord broke after ",
                                m.moved, " of its ", span.end - span.begin,
                                " bytes (", n, " in all)");
  return absl::UnavailableError(absl::StrCat(
      what, ": ", where,
      m.error != 0 ? absl::StrCat(" (", strerror(m.error), ")") : ""));
}

void BulkConnection::DropLocked() {
  for (int fd : fds_) close(fd);
  fds_.clear();
  state_ = State::kOff;
}

void BulkConnection::Close() {
  MutexLock lock(&mu_);
  DropLocked();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
