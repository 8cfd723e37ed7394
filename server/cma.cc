#include "server/cma.h"

#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/cma_bind.h"
#include "runtime/host_copy.h"
#include "server/secure_random.h"

namespace tensord {
namespace {

// Equal strings, in time that depends on their lengths only.
bool SameTicket(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

absl::StatusOr<std::string> NewTicket() {
  static_assert(kCmaTicketBytes % 2 == 0, "hex digits");
  return SecureRandomHex(kCmaTicketBytes / 2);
}

// One process_vm_{read,write}v of a contiguous range, repeated while the
// kernel copies part of it; the errno of the call that copied nothing.
int CopyRange(pid_t pid, bool write, uint64_t remote, char* local, size_t n) {
  while (n > 0) {
    iovec mine{local, n};
    iovec theirs{reinterpret_cast<void*>(remote), n};
    const ssize_t got = write ? process_vm_writev(pid, &mine, 1, &theirs, 1, 0)
                              : process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
    if (got < 0) return errno;
    if (got == 0) return EFAULT;
    local += got;
    remote += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
  return 0;
}

absl::Status NotBound(absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": ", CmaPeer::kNotBoundText));
}

}  // namespace

absl::StatusOr<std::shared_ptr<CmaPeer>> CmaPeer::Create() {
  absl::StatusOr<std::string> ticket = NewTicket();
  if (!ticket.ok()) return ticket.status();
  return std::shared_ptr<CmaPeer>(new CmaPeer(*std::move(ticket)));
}

std::string CmaPeer::ticket() const {
  MutexLock lock(&mu_);
  return ticket_;
}

void CmaPeer::Renew() {
  absl::StatusOr<std::string> ticket = NewTicket();
  MutexLock lock(&mu_);
  bound_.reset();
  ticket_ = ticket.ok() ? *std::move(ticket) : std::string();
}

bool CmaPeer::HoldsTicket(absl::string_view ticket) const {
  MutexLock lock(&mu_);
  return SameTicket(ticket_, ticket);
}

absl::Status CmaPeer::Bind(absl::string_view ticket,
                           absl::StatusOr<PeerProcess> peer) {
  MutexLock lock(&mu_);
  if (!SameTicket(ticket_, ticket)) {
    return absl::NotFoundError("the ticket is not (or no longer) current");
  }
  ticket_.clear();  // one try per ticket
  if (!peer.ok()) return peer.status();
  bound_ = std::make_shared<const PeerProcess>(*std::move(peer));
  return absl::OkStatus();
}

bool CmaPeer::bound() const {
  MutexLock lock(&mu_);
  return bound_ != nullptr && !bound_->Exited();
}

std::shared_ptr<const PeerProcess> CmaPeer::Live() {
  MutexLock lock(&mu_);
  if (bound_ != nullptr && bound_->Exited()) bound_.reset();
  return bound_;
}

absl::Status CmaPeer::Copy(bool write, uint64_t remote, char* local, size_t n,
                           absl::string_view what) {
  // Checked before every copy, so a pid the bound process left behind is
  // never used (the pidfd says it exited before the pid can be reused,
  // unless the whole pid space wraps between this check and the copy).
  const std::shared_ptr<const PeerProcess> peer = Live();
  if (peer == nullptr) return NotBound(what);
  if (n == 0) return absl::OkStatus();
  if (remote + n < remote) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cma range 0x", absl::Hex(remote), " + ", n, " wraps around"));
  }
  std::atomic<int> first_error{0};
  ForEachCopyRange(n, [&](size_t from, size_t to) {
    const int err =
        CopyRange(peer->pid(), write, remote + from, local + from, to - from);
    int none = 0;
    if (err != 0) first_error.compare_exchange_strong(none, err);
  });
  const int err = first_error.load();
  if (err == 0) return absl::OkStatus();
  // Every text below is about the bound client's own memory.
  if (peer->Exited()) return NotBound(what);
  const std::string range =
      absl::StrCat(what, ": bytes [0x", absl::Hex(remote), ", +", n,
                   ") in the session's client process");
  const char* call = write ? "process_vm_writev" : "process_vm_readv";
  if (err == EFAULT) {
    return absl::InvalidArgumentError(
        absl::StrCat(range, " are not mapped", write ? " writable" : "", " (",
                     call, ": ", std::strerror(err), ")"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(range, ": ", call, ": ", std::strerror(err)));
}

absl::Status CmaPeer::Read(uint64_t remote, void* local, size_t n,
                           absl::string_view what) {
  return Copy(/*write=*/false, remote, static_cast<char*>(local), n, what);
}

absl::Status CmaPeer::Write(uint64_t remote, const void* local, size_t n,
                            absl::string_view what) {
  // process_vm_writev only reads `local`.
  return Copy(/*write=*/true, remote,
              const_cast<char*>(static_cast<const char*>(local)), n, what);
}

}  // namespace tensord
