#include "server/bulk_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// How long a connection may take to send its hello, and how many may be
// sending theirs at once.
constexpr absl::Duration kHelloTime = absl::Seconds(2);
constexpr size_t kMaxArriving = 64;
// A lane's hello is one byte longer than lane 0's.
constexpr size_t kHelloBytes = kBulkMagicBytes + kBulkTokenBytes;
constexpr size_t kLaneHelloBytes = kHelloBytes + 1;

// How long the hello whose first `got` bytes are `hello` is.
size_t HelloBytes(const char* hello, size_t got) {
  return got >= kBulkMagicBytes &&
                 std::memcmp(hello, kBulkLaneMagic, kBulkMagicBytes) == 0
             ? kLaneHelloBytes
             : kHelloBytes;
}

int Millis(absl::Duration d) {
  return static_cast<int>(absl::ToInt64Milliseconds(d));
}

}  // namespace

absl::StatusOr<std::unique_ptr<BulkListener>> BulkListener::Start(
    const std::string& host, int port, Lookup lookup) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             service.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bulk socket: cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      error = strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("bulk socket: cannot listen on ",
                                               host, ":", port, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int chosen =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(fd);
    return absl::InternalError("bulk socket: eventfd failed");
  }
  return std::unique_ptr<BulkListener>(
      new BulkListener(fd, wake, chosen, std::move(lookup)));
}

BulkListener::BulkListener(int fd, int wake_fd, int port, Lookup lookup)
    : fd_(fd), wake_fd_(wake_fd), port_(port), lookup_(std::move(lookup)) {
  thread_ = std::thread([this] { AcceptLoop(); });
}

BulkListener::~BulkListener() {
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    spdlog::warn("bulk socket: cannot wake the listener");
  }
  thread_.join();
  close(fd_);
  close(wake_fd_);
}

void BulkListener::AcceptLoop() {
  // Connections whose hello is still arriving: read as their bytes come, so
  // a silent one holds only its own slot, for at most kHelloTime.
  struct Arriving {
    int fd;
    absl::Time deadline;
    size_t got = 0;
    char hello[kLaneHelloBytes];
  };
  std::vector<Arriving> arriving;
  std::vector<pollfd> polled;
  while (true) {
    polled.assign({{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}});
    absl::Time first = absl::InfiniteFuture();
    for (const Arriving& a : arriving) {
      polled.push_back({a.fd, POLLIN, 0});
      first = std::min(first, a.deadline);
    }
    const int timeout =
        arriving.empty() ? -1 : std::max(0, Millis(first - absl::Now())) + 1;
    if (poll(polled.data(), polled.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("bulk socket: poll failed: {}", strerror(errno));
      break;
    }
    if (polled[1].revents != 0) break;
    const absl::Time now = absl::Now();
    std::vector<Arriving> still;
    for (size_t i = 0; i < arriving.size(); ++i) {
      Arriving& a = arriving[i];
      if (polled[i + 2].revents != 0) {
        // Up to the magic first, then the rest of that hello's length: a
        // client sends nothing more until it has the answer.
        const size_t want = a.got < kBulkMagicBytes
                                ? kBulkMagicBytes
                                : HelloBytes(a.hello, a.got);
        const ssize_t r =
            recv(a.fd, a.hello + a.got, want - a.got, MSG_DONTWAIT);
        if (r > 0) a.got += static_cast<size_t>(r);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
          close(a.fd);
          continue;
        }
      }
      if (a.got >= kBulkMagicBytes && a.got == HelloBytes(a.hello, a.got)) {
        Admit(a.fd, a.hello);
      } else if (now >= a.deadline) {
        close(a.fd);
      } else {
        still.push_back(a);
      }
    }
    arriving.swap(still);
    if (polled[0].revents != 0) {
      const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn >= 0 && arriving.size() >= kMaxArriving) {
        close(conn);  // a flood of silent connections: the newest go
      } else if (conn >= 0) {
        arriving.push_back({conn, now + kHelloTime});
      }
    }
  }
  for (const Arriving& a : arriving) close(a.fd);
}

void BulkListener::Admit(int fd, const char* hello) {
  const bool lane_hello =
      std::memcmp(hello, kBulkLaneMagic, kBulkMagicBytes) == 0;
  if (!lane_hello && std::memcmp(hello, kBulkMagic, kBulkMagicBytes) != 0) {
    close(fd);
    return;
  }
  const uint32_t lane =
      lane_hello ? static_cast<unsigned char>(hello[kHelloBytes]) : 0;
  std::shared_ptr<BulkChannel> channel =
      lookup_(absl::string_view(hello + kBulkMagicBytes, kBulkTokenBytes));
  if (channel == nullptr) {
    spdlog::warn("bulk socket: a connection with an unknown token, closed");
    close(fd);
    return;
  }
  const int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // to answer after Attach
  if (dup_fd < 0 || !channel->Attach(fd, lane)) {
    if (dup_fd >= 0) close(dup_fd);
    return;
  }
  if (send(dup_fd, &kBulkAccepted, 1, MSG_NOSIGNAL) != 1) {
    spdlog::warn("bulk socket: the accepted client went away");
  }
  close(dup_fd);
}

std::string TcpHostOf(absl::string_view listen) {
  if (listen.substr(0, 5) == "unix:" || listen.find("://") != listen.npos) {
    return "";
  }
  const size_t colon = listen.rfind(':');
  if (colon == listen.npos) return "";
  absl::string_view host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::string(host);
}

}  // namespace tensord
