// The bulk socket's connection: connect, TLS handshake (when the session has
// ClientOptions::tls), hello, and striped transfers. See
// client/bulk_connection.h.
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

// Connects to host:port; -1 on failure.
int Connect(const std::string& host, uint32_t port) {
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
  return fd;
}

// One lane's part of a transfer: how far it got, and why it stopped.
struct LaneMove {
  size_t moved = 0;
  int error = 0;          // errno after a short move; 0: the peer closed
  std::string tls_error;  // with EPROTO: TLS's reason
};

}  // namespace

bool BulkConnection::Wanted(const ClientOptions& options) {
  // A daemon serving TLS makes its lanes TLS too (server/bulk_tls.h): this
  // client's are made from ClientOptions::tls. Opaque credentials cannot be
  // read back, so such a session keeps every byte on its (secure) stream.
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
      lanes_option_(options.bulk_lanes),
      tls_credentials_(options.tls) {}

BulkConnection::~BulkConnection() { Close(); }

bool BulkConnection::Usable() {
  MutexLock lock(&mu_);
  return UsableLocked();
}

uint32_t BulkConnection::lanes() {
  MutexLock lock(&mu_);
  return lanes_locked();
}

std::string BulkConnection::refusal() {
  MutexLock lock(&mu_);
  return refusal_;
}

uint32_t BulkConnection::LanesWanted() const {
  const uint32_t cap = lanes_option_;
  return cap == 0 ? lanes_offered_ : std::min(cap, lanes_offered_);
}

absl::StatusOr<LaneSocket> BulkConnection::ConnectLane(
    uint32_t lane, const BulkTlsClient* tls) const {
  const std::string host = TcpHostOf(address_);
  const int fd = Connect(host, port_);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot connect to tensord's bulk socket at ", host, ":", port_));
  }
  // Each read and write of the handshake and the hello's answer waits
  // connect_timeout_ at most.
  LaneSocket socket;
  if (tls != nullptr) {
    absl::StatusOr<LaneSocket> secured =
        tls->Handshake(fd, host, connect_timeout_);
    if (!secured.ok()) return secured.status();
    socket = *std::move(secured);
  } else {
    socket = LaneSocket(fd);
    socket.SetTimeout(connect_timeout_);
  }
  std::string hello =
      absl::StrCat(absl::string_view(lane == 0 ? kBulkMagic : kBulkLaneMagic,
                                     kBulkMagicBytes),
                   token_);
  if (lane != 0) hello.push_back(static_cast<char>(lane));
  char answer = 0;
  if (socket.SendAll(hello.data(), hello.size()) != hello.size() ||
      socket.RecvAll(&answer, 1) != 1 || answer != kBulkAccepted) {
    // Refused (e.g. the token was used, or mutual TLS refused this client's
    // certificate): the stream serves.
    return absl::UnavailableError(absl::StrCat(
        "tensord's bulk socket at ", host, ":", port_, " refused lane ", lane,
        socket.tls_error().empty() ? "" : ": ", socket.tls_error()));
  }
  socket.SetTimeout(absl::ZeroDuration());  // transfers may wait for queued
                                            // work: no timeout
  return socket;
}

bool BulkConnection::MakeTlsLocked(std::shared_ptr<const BulkTlsClient>* tls) {
  if (!tls_credentials_.has_value()) return true;
  absl::StatusOr<std::shared_ptr<const BulkTlsClient>> made =
      BulkTlsClient::Create(*tls_credentials_);
  if (!made.ok()) {
    refusal_ = std::string(made.status().message());
    return false;
  }
  *tls = *std::move(made);
  return true;
}

bool BulkConnection::UsableLocked() {
  if (state_ != State::kUnknown) return state_ == State::kWorks;
  state_ = State::kOff;
  if (!Wanted(enabled_, address_) || port_ == 0 ||
      token_.size() != kBulkTokenBytes) {
    return false;
  }
  // One context for the session's lanes (they outlive it: each SSL holds a
  // reference to it).
  std::shared_ptr<const BulkTlsClient> tls;
  if (!MakeTlsLocked(&tls)) return false;
  const uint32_t wanted = LanesWanted();
  for (uint32_t lane = 0; lane < wanted; ++lane) {
    absl::StatusOr<LaneSocket> socket = ConnectLane(lane, tls.get());
    if (!socket.ok()) {  // the lanes before it serve
      if (lane == 0) refusal_ = std::string(socket.status().message());
      break;
    }
    lanes_.push_back(*std::move(socket));
  }
  if (lanes_.empty()) return false;
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
  if (lanes > lanes_.size()) {
    const size_t connected = lanes_.size();
    DropLocked();
    return absl::InternalError(absl::StrCat(what, ": striped over ", lanes,
                                            " lanes of the bulk socket, but ",
                                            connected, " are connected"));
  }
  // Each lane's socket is used by its lane's thread; the lanes outlive the
  // move (mu_ is held throughout, so no Drop runs meanwhile).
  LaneSocket* const sockets = lanes_.data();
  std::vector<LaneMove> moves(lanes);
  std::atomic<bool> failed{false};
  auto run = [&](uint32_t lane) {
    const BulkLaneSpan span = BulkLane(n, lanes, lane);
    const size_t len = span.end - span.begin;
    errno = 0;
    LaneSocket& socket = sockets[lane];
    moves[lane].moved = upload ? socket.SendAll(data + span.begin, len)
                               : socket.RecvAll(data + span.begin, len);
    if (moves[lane].moved == len) return;
    moves[lane].error = errno;
    moves[lane].tls_error = socket.tls_error();
    // The other lanes may wait on a peer that gave up: wake them.
    if (!failed.exchange(true)) {
      for (uint32_t i = 0; i < lanes; ++i) sockets[i].Wake();
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
  const std::string why = !m.tls_error.empty() ? m.tls_error
                          : m.error != 0       ? strerror(m.error)
                                               : "";
  return absl::UnavailableError(absl::StrCat(
      what, ": ", where, why.empty() ? "" : " (", why, why.empty() ? "" : ")"));
}

void BulkConnection::DropLocked() {
  lanes_.clear();  // closes them
  state_ = State::kOff;
}

void BulkConnection::Close() {
  MutexLock lock(&mu_);
  DropLocked();
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
