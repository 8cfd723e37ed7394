#include "server/listen_address.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tensord {
namespace {

bool IsLoopbackHost(absl::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (absl::AsciiStrToLower(host) == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, dotted quad only.
  std::vector<absl::string_view> parts = absl::StrSplit(host, '.');
  if (parts.size() != 4 || parts[0] != "127") return false;
  for (absl::string_view p : parts) {
    int octet;
    if (!absl::SimpleAtoi(p, &octet) || octet < 0 || octet > 255) return false;
  }
  return true;
}

// Whether a process accepts connections on the socket at `path`.
bool SomeoneListens(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool live =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return live;
}

std::string Errno(absl::string_view what, const std::string& path) {
  return absl::StrCat(what, " ", path, ": ", std::strerror(errno));
}

}  // namespace

absl::Status CheckInsecureListen(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:")) return absl::OkStatus();
  absl::string_view address = listen;
  absl::ConsumePrefix(&address, "dns:");
  absl::ConsumePrefix(&address, "ipv4:");
  absl::ConsumePrefix(&address, "ipv6:");
  const size_t colon = address.rfind(':');
  const absl::string_view host =
      colon == address.npos ? address : address.substr(0, colon);
  if (!absl::StrContains(listen, "unix-abstract:") && IsLoopbackHost(host)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--insecure makes every caller an admin, so it serves loopback (e.g. "
      "--listen=127.0.0.1:50051) or unix:PATH addresses only, not --listen=",
      listen, "; pass --tokens_file to serve other hosts"));
}

absl::StatusOr<mode_t> ParseSocketMode(absl::string_view text) {
  unsigned mode = 0;
  bool ok = !text.empty() && text.size() <= 4;
  for (char c : text) {
    if (c < '0' || c > '7') ok = false;
    mode = mode * 8 + static_cast<unsigned>(c - '0');
  }
  if (!ok || mode > 0777) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--unix_socket_mode=", text,
        ": expected octal permissions such as 0660 (at most 0777)"));
  }
  return static_cast<mode_t>(mode);
}

absl::StatusOr<std::unique_ptr<UnixSocketPlacement>>
UnixSocketPlacement::Prepare(std::string path, mode_t mode) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--listen=unix:", path,
          " is a symbolic link; refusing to follow it (remove it, or name "
          "the socket's real path)"));
    }
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("--listen=unix:", path,
                       " exists and is not a socket; refusing to replace it"));
    }
    if (SomeoneListens(path)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--listen=unix:", path, ": another process listens there"));
    }
    // A stale socket: Publish's rename replaces it.
  } else if (errno != ENOENT) {
    return absl::FailedPreconditionError(Errno("cannot inspect", path));
  }
  const size_t slash = path.rfind('/');
  const std::string parent =
      slash == std::string::npos ? "." : path.substr(0, slash);
  std::string dir = absl::StrCat(parent, "/.tensord-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {  // mode 0700
    return absl::FailedPreconditionError(
        Errno("cannot make a private directory in", parent));
  }
  if (dir.size() + 8 >= sizeof(sockaddr_un::sun_path)) {
    rmdir(dir.c_str());
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=unix:", path, ": the path is too long to bind beside it"));
  }
  return std::unique_ptr<UnixSocketPlacement>(
      new UnixSocketPlacement(std::move(path), mode, std::move(dir)));
}

UnixSocketPlacement::UnixSocketPlacement(std::string path, mode_t mode,
                                         std::string dir)
    : path_(std::move(path)),
      mode_(mode),
      private_dir_(std::move(dir)),
      private_socket_(private_dir_ + "/socket") {}

absl::Status UnixSocketPlacement::Publish() {
  // Nobody but us can reach private_socket_ (its directory is 0700).
  if (chmod(private_socket_.c_str(), mode_) != 0) {
    return absl::InternalError(Errno("cannot chmod", private_socket_));
  }
  struct stat st;
  if (lstat(private_socket_.c_str(), &st) != 0) {
    return absl::InternalError(Errno("cannot inspect", private_socket_));
  }
  if (rename(private_socket_.c_str(), path_.c_str()) != 0) {
    return absl::FailedPreconditionError(
        Errno("cannot move the socket to", path_));
  }
  published_inode_ = st.st_ino;
  rmdir(private_dir_.c_str());  // empty now
  return absl::OkStatus();
}

UnixSocketPlacement::~UnixSocketPlacement() {
  struct stat st;
  if (published_inode_ != 0 && lstat(path_.c_str(), &st) == 0 &&
      S_ISSOCK(st.st_mode) && st.st_ino == published_inode_) {
    unlink(path_.c_str());
  }
  unlink(private_socket_.c_str());
  rmdir(private_dir_.c_str());
}

}  // namespace tensord
