#include "server/bulk_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace tensord {
namespace {

int Millis(absl::Duration d) {
  return static_cast<int>(absl::ToInt64Milliseconds(d));
}

}  // namespace

BulkChannel::BulkChannel(absl::Duration stall, uint32_t lanes)
    : stall_(stall),
      lanes_offered_(std::clamp<uint32_t>(lanes, 1, kBulkMaxLanes)),
      conns_(lanes_offered_) {}

BulkChannel::~BulkChannel() = default;  // the connections close themselves

bool BulkChannel::Attach(int fd, uint32_t lane) {
  return Attach(LaneSocket(fd), lane, /*answer=*/false);
}

bool BulkChannel::Attach(LaneSocket conn, uint32_t lane, bool answer) {
  MutexLock lock(&mu_);
  if (lane >= conns_.size() || conns_[lane].open() || shut_down_ ||
      !broken_.ok()) {
    return false;  // `conn` closes
  }
  conns_[lane] = std::move(conn);
  // The answer of one byte on a fresh connection: its send buffer is empty,
  // so this waits only where TLS must read first (not at all in practice).
  for (int tries = 0; answer && tries < 20; ++tries) {
    short want = POLLOUT;
    const ssize_t r = conns_[lane].Send(&kBulkAccepted, 1, &want);
    if (r == 1) break;
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{conns_[lane].fd(), want, 0};
      poll(&p, 1, 50);
      continue;
    }
    break;  // the client went away: its lane fails at its first use
  }
  return true;
}

bool BulkChannel::attached() const {
  MutexLock lock(&mu_);
  return conns_[0].open();
}

uint32_t BulkChannel::lanes_attached() const {
  MutexLock lock(&mu_);
  uint32_t n = 0;
  while (n < conns_.size() && conns_[n].open()) ++n;
  return n;
}

void BulkChannel::Shutdown() {
  MutexLock lock(&mu_);
  shut_down_ = true;
  // Not closed here: the executor may be inside recv/send on them; shutdown
  // ends those at once, and the executor's Break closes them.
  for (LaneSocket& conn : conns_) conn.Wake();
}

void BulkChannel::WakeAll() {
  MutexLock lock(&mu_);
  for (LaneSocket& conn : conns_) conn.Wake();
}

absl::StatusOr<std::vector<LaneSocket*>> BulkChannel::Usable(
    absl::string_view what, uint32_t lanes) {
  lanes = std::max<uint32_t>(lanes, 1);
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) {
      return absl::Status(broken_.code(),
                          absl::StrCat(what, ": ", broken_.message()));
    }
    if (shut_down_) {
      return absl::CancelledError(
          absl::StrCat(what, ": the session's bulk socket was shut down"));
    }
    if (!conns_[0].open()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what,
                       ": the session has no bulk socket attached (connect to "
                       "Welcome.bulk_port with Welcome.bulk_token first)"));
    }
    if (lanes <= conns_.size() &&
        std::all_of(conns_.begin(), conns_.begin() + lanes,
                    [](const LaneSocket& conn) { return conn.open(); })) {
      std::vector<LaneSocket*> usable;
      for (uint32_t i = 0; i < lanes; ++i) usable.push_back(&conns_[i]);
      return usable;
    }
  }
  // The client striped bytes over lanes this end does not have: where
  // they went can no longer be matched to commands.
  return Break(absl::FailedPreconditionError(absl::StrCat(
      what, ": striped over ", lanes, " lanes of the bulk socket, but ",
      lanes_attached(), " of the ", lanes_offered_, " offered are attached")));
}

absl::Status BulkChannel::Break(absl::Status status) {
  MutexLock lock(&mu_);
  if (broken_.ok()) {
    broken_ = absl::Status(
        status.code(),
        absl::StrCat("the bulk socket is unusable after an earlier "
                     "failure (",
                     status.message(), ")"));
  }
  for (LaneSocket& conn : conns_) conn.Close();
  return status;
}

absl::Status BulkChannel::MoveLane(short events, LaneSocket& conn,
                                   uint32_t lane, uint32_t lanes,
                                   uint64_t begin, uint64_t end, size_t n,
                                   absl::string_view what, Step step) {
  // "<what>: <lane> <happened> after <moved> of <bytes>", built only on a
  // failure; one lane's counts are the transfer's, a striped lane says its
  // span.
  auto failure = [&](absl::string_view happened, uint64_t moved) {
    const std::string which =
        lanes <= 1 ? "the bulk socket"
                   : absl::StrCat("lane ", lane, " of the bulk socket");
    const std::string of = lanes <= 1
                               ? absl::StrCat(n)
                               : absl::StrCat(end - begin, " (bytes ", begin,
                                              " to ", end, " of ", n, ")");
    return absl::StrCat(what, ": ", which, " ", happened, " after ", moved,
                        " of ", of, " bytes");
  };
  uint64_t pos = begin;
  short want = events;  // TLS may need the other direction first
  bool blocked = false;  // the last step moved nothing until `want`
  while (pos < end) {
    // Bytes TLS read already are not the socket's: poll would miss them.
    if (blocked || !(want == POLLIN && conn.Buffered())) {
      pollfd p{conn.fd(), want, 0};
      const int ready = poll(&p, 1, Millis(stall_));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        return absl::DeadlineExceededError(failure(
            absl::StrCat("moved no byte for ", absl::FormatDuration(stall_)),
            pos - begin));
      }
    }
    want = events;
    const ssize_t r = step(lane, conn, pos, end - pos, &want);
    blocked = r < 0 && errno == EAGAIN;
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) {
      const std::string why =
          r == 0 ? "closed"
                 : absl::StrCat("failed (",
                                errno == EPROTO && conn.tls()
                                    ? "TLS: " + conn.tls_error()
                                    : std::string(strerror(errno)),
                                ")");
      return absl::UnavailableError(failure(why, pos - begin));
    }
    pos += static_cast<uint64_t>(r);
  }
  return absl::OkStatus();
}

absl::Status BulkChannel::Transfer(short events, size_t n, uint32_t lanes,
                                   absl::string_view what, Step step) {
  absl::StatusOr<std::vector<LaneSocket*>> fds = Usable(what, lanes);
  if (!fds.ok()) return fds.status();
  lanes = static_cast<uint32_t>(fds->size());
  // The first lane to fail wakes the others (the peer may have stopped
  // sending on them too) and its error is the transfer's.
  Mutex failed_mu;
  absl::Status failed;
  auto run = [&](uint32_t lane) {
    const BulkLaneSpan span = BulkLane(n, lanes, lane);
    absl::Status status = MoveLane(events, *(*fds)[lane], lane, lanes,
                                   span.begin, span.end, n, what, step);
    if (status.ok()) return;
    bool first = false;
    {
      MutexLock lock(&failed_mu);
      first = failed.ok();
      if (first) failed = std::move(status);
    }
    if (first) WakeAll();
  };
  MoveLanesAtOnce(n, lanes, run);
  MutexLock lock(&failed_mu);
  if (!failed.ok()) return Break(std::move(failed));
  return absl::OkStatus();
}

absl::Status BulkChannel::Read(char* dst, size_t n, absl::string_view what,
                               uint32_t lanes) {
  return Transfer(POLLIN, n, lanes, what,
                  [dst](uint32_t, LaneSocket& conn, uint64_t pos, size_t len,
                        short* want) {
                    return conn.Recv(dst + pos, len, want);
                  });
}

absl::Status BulkChannel::Discard(size_t n, absl::string_view what,
                                  uint32_t lanes) {
  constexpr size_t kScratch = 1 << 20;
  const uint32_t slots = std::clamp<uint32_t>(lanes, 1, kBulkMaxLanes);
  std::vector<char> scratch(std::min<size_t>(n, kScratch) * slots);
  const size_t each = scratch.size() / slots;
  return Transfer(
      POLLIN, n, lanes, what,
      [&](uint32_t lane, LaneSocket& conn, uint64_t, size_t len, short* want) {
        return conn.Recv(scratch.data() + each * lane, std::min(len, each),
                         want);
      });
}

absl::Status BulkChannel::Write(const char* src, size_t n,
                                absl::string_view what, uint32_t lanes) {
  return Transfer(POLLOUT, n, lanes, what,
                  [src](uint32_t, LaneSocket& conn, uint64_t pos, size_t len,
                        short* want) {
                    return conn.Send(src + pos, len, want);
                  });
}

}  // namespace tensord
