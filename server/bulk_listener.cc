#include "server/bulk_listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// A lane's hello is one byte longer than lane 0's.
constexpr size_t kHelloBytes = kBulkMagicBytes + kBulkTokenBytes;
constexpr size_t kLaneHelloBytes = kHelloBytes + 1;

// How long the hello whose first `got` bytes are `hello` is: the shorter
// (lane 0's) until its magic says.
size_t HelloBytes(const char* hello, size_t got) {
  return got >= kBulkMagicBytes &&
                 std::memcmp(hello, kBulkLaneMagic, kBulkMagicBytes) == 0
             ? kLaneHelloBytes
             : kHelloBytes;
}

// A lane's TLS connection while its handshake and hello arrive.
class TlsHelloStream : public HelloStream {
 public:
  explicit TlsHelloStream(LaneSocket conn) : conn_(std::move(conn)) {}
  int fd() const override { return conn_.fd(); }
  ssize_t ReadSome(char* dst, size_t len, short* want) override {
    const ssize_t r = conn_.Recv(dst, len, want);
    if (r < 0 && errno == EPROTO) {
      // A client speaking plaintext, or one whose certificate failed.
      spdlog::info("bulk socket: a connection refused: TLS: {}",
                   conn_.tls_error());
    }
    return r;
  }
  LaneSocket Take() { return std::move(conn_); }

 private:
  LaneSocket conn_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BulkListener>> BulkListener::Start(
    const std::string& host, int port, Lookup lookup,
    std::shared_ptr<const BulkTls> tls) {
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
  std::unique_ptr<BulkListener> listener(
      new BulkListener(chosen, std::move(lookup)));
  HelloAcceptor::Hooks hooks;
  hooks.hello_bytes = &HelloBytes;
  hooks.admit = [l = listener.get()](int conn, absl::string_view hello) {
    l->Admit(conn, hello.data());
  };
  if (tls != nullptr) {
    hooks.open = [tls](int conn) -> std::unique_ptr<HelloStream> {
      LaneSocket accepted = tls->Accept(conn);
      if (!accepted.open()) return nullptr;
      return std::make_unique<TlsHelloStream>(std::move(accepted));
    };
    hooks.admit_stream = [l = listener.get()](
                             std::unique_ptr<HelloStream> stream,
                             absl::string_view hello) {
      l->AdmitTls(static_cast<TlsHelloStream*>(stream.get())->Take(),
                  hello.data());
    };
  }
  TD_ASSIGN_OR_RETURN(
      listener->acceptor_,
      HelloAcceptor::Start(fd, "bulk socket", std::move(hooks)));
  return listener;
}

BulkListener::BulkListener(int port, Lookup lookup)
    : port_(port), lookup_(std::move(lookup)) {}

std::shared_ptr<BulkChannel> BulkListener::Find(const char* hello,
                                                uint32_t* lane) const {
  const bool lane_hello =
      std::memcmp(hello, kBulkLaneMagic, kBulkMagicBytes) == 0;
  if (!lane_hello && std::memcmp(hello, kBulkMagic, kBulkMagicBytes) != 0) {
    return nullptr;
  }
  *lane = lane_hello ? static_cast<unsigned char>(hello[kHelloBytes]) : 0;
  std::shared_ptr<BulkChannel> channel =
      lookup_(absl::string_view(hello + kBulkMagicBytes, kBulkTokenBytes));
  if (channel == nullptr) {
    spdlog::warn("bulk socket: a connection with an unknown token, closed");
  }
  return channel;
}

void BulkListener::AdmitTls(LaneSocket conn, const char* hello) {
  uint32_t lane = 0;
  std::shared_ptr<BulkChannel> channel = Find(hello, &lane);
  if (channel != nullptr) channel->Attach(std::move(conn), lane, true);
  // else `conn` closes
}

void BulkListener::Admit(int fd, const char* hello) {
  uint32_t lane = 0;
  std::shared_ptr<BulkChannel> channel = Find(hello, &lane);
  if (channel == nullptr) {
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
