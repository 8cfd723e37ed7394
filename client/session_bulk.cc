// The bulk socket (docs/protocol.md "Bulk socket"; the daemon's side is
// server/bulk_socket.h): a plain TCP connection beside the stream that
// carries the bytes of large uploads and downloads when the client has no
// shared-memory region. The command still goes on the stream; its bytes
// follow on the socket in command order, which bulk_mu_ guarantees by
// covering a transfer's command and bytes together.
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/session.h"
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

bool Session::WantBulk() const {
  const char* env = std::getenv("TENSORD_BULK");
  return options_.bulk && (env == nullptr || std::string(env) != "0") &&
         !TcpHostOf(address_).empty();
}

bool Session::bulk_active() {
  MutexLock lock(&bulk_mu_);
  return BulkUsableLocked();
}

bool Session::BulkUsableLocked() {
  if (bulk_state_ != BulkState::kUnknown) {
    return bulk_state_ == BulkState::kWorks;
  }
  bulk_state_ = BulkState::kOff;
  if (!WantBulk() || welcome_.bulk_port() == 0 ||
      welcome_.bulk_token().size() != kBulkTokenBytes || shm_ != nullptr) {
    return false;
  }
  const int fd = Connect(TcpHostOf(address_), welcome_.bulk_port(),
                         options_.connect_timeout);
  if (fd < 0) return false;
  const std::string hello = absl::StrCat(
      absl::string_view(kBulkMagic, kBulkMagicBytes), welcome_.bulk_token());
  char answer = 0;
  if (SendAll(fd, hello.data(), hello.size()) != hello.size() ||
      RecvAll(fd, &answer, 1) != 1 || answer != kBulkAccepted) {
    close(fd);  // refused (e.g. the token was used): the stream serves
    return false;
  }
  timeval none{0, 0};  // transfers may wait for queued work: no timeout
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  bulk_fd_ = fd;
  bulk_state_ = BulkState::kWorks;
  return true;
}

void Session::DropBulkLocked() {
  if (bulk_fd_ >= 0) close(bulk_fd_);
  bulk_fd_ = -1;
  bulk_state_ = BulkState::kOff;
}

std::optional<absl::StatusOr<uint64_t>> Session::UploadBulk(const char* data,
                                                            uint64_t total,
                                                            v1::Put first,
                                                            HandleMeta meta) {
  MutexLock bulk_lock(&bulk_mu_);
  if (!BulkUsableLocked()) return std::nullopt;
  uint64_t seq = 0;
  absl::StatusOr<uint64_t> appended =
      AppendWholePut([total](v1::Put* put) { put->set_bulk_size(total); },
                     std::move(first), std::move(meta), &seq);
  if (!appended.ok()) return appended.status();
  const uint64_t handle = *appended;
  // The Put goes out first (a broken stream is resumed, and the resent Put
  // finds these bytes still waiting on the socket). Once sent, the bytes
  // are the kernel's: the caller may reuse its memory.
  Flush().IgnoreError();
  errno = 0;
  const size_t sent = SendAll(bulk_fd_, data, total);
  if (sent != total) {
    // The daemon fails the Put (its handle is poisoned, and released here);
    // later transfers take the stream.
    absl::Status error =
        Short(absl::StrCat("upload of handle ", handle), sent, total);
    DropBulkLocked();
    QueueRelease(handle);
    return error;
  }
  return handle;
}

std::optional<absl::StatusOr<HostTensor>> Session::DownloadBulk(
    uint64_t handle, const std::string& site, uint64_t total,
    DownloadTarget target) {
  if (target.data != nullptr && total > target.capacity) return std::nullopt;
  MutexLock bulk_lock(&bulk_mu_);
  if (!BulkUsableLocked()) return std::nullopt;
  uint64_t request_id;
  {
    MutexLock enqueue_lock(&enqueue_mu_);
    absl::StatusOr<uint64_t> queued = EnqueueGetLocked(
        handle, site, [](v1::Get* get) { get->set_bulk(true); }, target);
    if (!queued.ok()) return queued.status();
    request_id = *queued;
  }
  Flush().IgnoreError();
  PendingDownload got = AwaitDownload(request_id);
  if (!got.status.ok()) return got.status;
  // The daemon may answer on the stream instead (a device tensor).
  if (!got.shm) return got.assembler.Take();
  const v1::Data& reply = got.shm_reply;
  const uint64_t n = reply.bulk_size();
  std::string owned;
  char* dst = target.data;
  size_t capacity = target.capacity;
  if (dst == nullptr) {
    owned.resize(n);
    dst = owned.data();
    capacity = n;
  }
  if (n == 0 || n > capacity || n != total || reply.offset() != 0 ||
      !reply.last()) {
    DropBulkLocked();  // its bytes can no longer be matched to requests
    return absl::InternalError(
        absl::StrCat("tensord answered the bulk Get of handle ", handle,
                     " with ", n, " bytes for a destination of ", capacity));
  }
  errno = 0;
  const size_t got_bytes = RecvAll(bulk_fd_, dst, n);
  if (got_bytes != n) {
    absl::Status error =
        Short(absl::StrCat("download of handle ", handle), got_bytes, n);
    DropBulkLocked();
    return error;
  }
  // The bytes are in place: the assembler checks the answer against them.
  DataAssembler assembler;
  assembler.SetDestination(dst, capacity);
  absl::Status status = assembler.AddBytes(reply, absl::string_view(dst, n));
  if (!status.ok()) return status;
  HostTensor tensor = assembler.Take();
  if (!owned.empty()) tensor.bytes = std::move(owned);
  return tensor;
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
