#include "server/cma.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/host_copy.h"

namespace tensord {
namespace {

// The real and effective uid of `pid` (/proc/PID/status), or false.
bool ProcessUids(uint64_t pid, uint64_t* real, uint64_t* effective) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "Uid:")) continue;
    std::vector<absl::string_view> ids =
        absl::StrSplit(rest, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    return ids.size() >= 2 && absl::SimpleAtoi(ids[0], real) &&
           absl::SimpleAtoi(ids[1], effective);
  }
  return false;
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

}  // namespace

CmaPeer::CmaPeer(uint64_t pid, uint64_t probe_address, std::string nonce)
    : pid_(pid), probe_address_(probe_address), nonce_(std::move(nonce)) {}

absl::Status CmaPeer::CheckPeer() const {
  auto refused = [&](absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cross-memory attach to client process ", pid_, " refused: ", why,
        " (the client falls back to the "
        "shared-memory region; docs/protocol.md)"));
  };
  if (pid_ == 0 || pid_ > static_cast<uint64_t>(INT32_MAX)) {
    return refused("no such process id");
  }
  if (pid_ == static_cast<uint64_t>(getpid())) {
    return refused("it names the daemon itself");
  }
  uint64_t real = 0, effective = 0;
  if (!ProcessUids(pid_, &real, &effective)) {
    return refused("no such process on this host");
  }
  const uint64_t mine = geteuid();
  if (real != mine || effective != mine) {
    return refused(absl::StrCat("it runs as uid ", real, "/", effective,
                                ", the daemon as ", mine));
  }
  if (nonce_.empty()) return refused("the session has no region nonce");
  std::string probe(nonce_.size(), '\0');
  const int err = CopyRange(static_cast<pid_t>(pid_), /*write=*/false,
                            probe_address_, probe.data(), probe.size());
  if (err != 0) {
    return refused(absl::StrCat("its probe address cannot be read (",
                                std::strerror(err), ")"));
  }
  if (probe != nonce_) {
    return refused("its probe address does not hold the region's nonce");
  }
  return absl::OkStatus();
}

absl::Status CmaPeer::Verified() {
  MutexLock lock(&mu_);
  if (!verdict_.has_value()) verdict_ = CheckPeer();
  return *verdict_;
}

absl::Status CmaPeer::Copy(bool write, uint64_t remote, char* local, size_t n,
                           absl::string_view what) {
  absl::Status ok = Verified();
  if (!ok.ok()) return ok;
  if (n == 0) return absl::OkStatus();
  if (remote + n < remote) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cma range 0x", absl::Hex(remote), " + ", n, " wraps around"));
  }
  const pid_t pid = static_cast<pid_t>(pid_);
  std::atomic<int> first_error{0};
  ForEachCopyRange(n, [&](size_t from, size_t to) {
    const int err =
        CopyRange(pid, write, remote + from, local + from, to - from);
    int none = 0;
    if (err != 0) first_error.compare_exchange_strong(none, err);
  });
  const int err = first_error.load();
  if (err == 0) return absl::OkStatus();
  const std::string range =
      absl::StrCat(what, ": bytes [0x", absl::Hex(remote), ", +", n,
                   ") in client process ", pid_);
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
