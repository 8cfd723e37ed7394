#include "server/metrics_exporter.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"
#include "server/metrics_request.h"

namespace tensord {
namespace {

constexpr int kRequestTimeoutS = 2;
constexpr int kAnswerTimeoutS = 5;

// "[::1]" -> "::1".
absl::string_view Unbracket(absl::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

bool IsLoopbackHost(absl::string_view host) {
  if (absl::AsciiStrToLower(host) == "localhost") return true;
  const std::string text(Unbracket(host));
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 &&
         IN6_IS_ADDR_LOOPBACK(&v6);
}

void SetTimeout(int fd, int option, int seconds) {
  timeval tv{seconds, 0};
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

bool SendAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// A listening TCP socket on `host`:`port` and the port it got, or why not.
absl::StatusOr<std::pair<int, int>> Listen(const std::string& host,
                                           const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int r = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(),
                          &hints, &found);
      r != 0) {
    return absl::UnavailableError(gai_strerror(r));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      freeaddrinfo(found);
      const int got =
          bound.ss_family == AF_INET6
              ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
              : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      return std::make_pair(fd, got);
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError(error);
}

}  // namespace

absl::Status CheckMetricsAddress(absl::string_view address, bool allow_remote) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics_listen=", address,
        ": expected HOST:PORT, e.g. 127.0.0.1:9400 (port 0 picks one)"));
  }
  const absl::string_view host = address.substr(0, colon);
  if (allow_remote || IsLoopbackHost(host)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--metrics_listen=", address,
      " is not a loopback address, and the metrics name every user and "
      "session with no authentication; pass --metrics_allow_remote as well "
      "to serve them there (README.md \"Operating a shared box\")"));
}

absl::StatusOr<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(
    const std::string& address, bool allow_remote,
    std::shared_ptr<const prometheus::Collectable> collector) {
  if (absl::Status s = CheckMetricsAddress(address, allow_remote); !s.ok()) {
    return s;
  }
  const size_t colon = address.rfind(':');
  auto listening = Listen(std::string(Unbracket(address.substr(0, colon))),
                          address.substr(colon + 1));
  if (!listening.ok()) {
    return absl::UnavailableError(absl::StrCat("metrics: cannot listen on ",
                                               address, ": ",
                                               listening.status().message()));
  }
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(listening->first);
    return absl::UnavailableError("metrics: eventfd failed");
  }
  return std::unique_ptr<MetricsExporter>(new MetricsExporter(
      listening->first, wake, listening->second, std::move(collector)));
}

MetricsExporter::MetricsExporter(
    int fd, int wake_fd, int port,
    std::shared_ptr<const prometheus::Collectable> collector)
    : fd_(fd),
      wake_fd_(wake_fd),
      port_(port),
      collector_(std::move(collector)),
      thread_([this] { ServeLoop(); }) {}

MetricsExporter::~MetricsExporter() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(fd_);
  close(wake_fd_);
}

void MetricsExporter::ServeLoop() {
  while (true) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    Answer(conn);
    close(conn);
  }
}

void MetricsExporter::Answer(int conn) const {
  SetTimeout(conn, SO_RCVTIMEO, kRequestTimeoutS);
  SetTimeout(conn, SO_SNDTIMEO, kAnswerTimeoutS);
  // The whole head is read, so closing leaves no unread bytes (which would
  // reset the connection under the answer).
  std::string head;
  char buf[1024];
  RequestHead verdict = RequestHead::kIncomplete;
  while ((verdict = ClassifyRequestHead(head)) == RequestHead::kIncomplete) {
    const ssize_t n = recv(conn, buf, sizeof(buf), 0);
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  if (verdict == RequestHead::kTooLong) return;
  const bool metrics = verdict == RequestHead::kMetrics;
  const std::string body =
      metrics ? prometheus::TextSerializer().Serialize(collector_->Collect())
              : "tensord serves its metrics at /metrics\n";
  const std::string reply = absl::StrCat(
      metrics ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 404 Not Found\r\n",
      "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n",
      "Content-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
  if (SendAll(conn, reply)) shutdown(conn, SHUT_WR);
}

}  // namespace tensord
