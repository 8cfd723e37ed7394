// Checks and placement of the daemon's --listen address.
//
// Note [Unix listen sockets]: for --listen=unix:PATH the socket file's mode
// is the on-box access control, so it must never exist at another mode, and
// nothing at PATH may redirect it. gRPC binds with the umask's mode, so the
// socket is bound inside a fresh 0700 directory beside PATH (no one else
// can reach it there), chmod'ed to --unix_socket_mode, then renamed onto
// PATH: it appears there with its final mode, and rename replaces a
// symlink rather than following it. A symlink or a file other than a socket
// at PATH is refused; a socket nobody listens on (a stale one) is replaced;
// a live one is refused. Thread-compatible.
#ifndef TENSORD_SERVER_LISTEN_ADDRESS_H_
#define TENSORD_SERVER_LISTEN_ADDRESS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tensord {

// OK unless --insecure (every caller an admin) would serve `listen` beyond
// this host: only loopback hosts (127.0.0.0/8, ::1, localhost) and unix:
// paths (guarded by their mode) are allowed.
absl::Status CheckInsecureListen(absl::string_view listen);

// "0660" -> 0660; INVALID_ARGUMENT for anything but 1-4 octal digits of at
// most 0777.
absl::StatusOr<mode_t> ParseSocketMode(absl::string_view text);

class UnixSocketPlacement {
 public:
  // Checks `path` and makes the private directory to bind in.
  static absl::StatusOr<std::unique_ptr<UnixSocketPlacement>> Prepare(
      std::string path, mode_t mode);
  // Removes the private directory, and the socket at `path` if it is still
  // the one Publish put there.
  ~UnixSocketPlacement();

  // The address for gRPC to bind: unix:<private dir>/socket.
  std::string bind_address() const { return "unix:" + private_socket_; }
  // After the server bound bind_address(): sets the mode and moves the
  // socket onto `path`.
  absl::Status Publish();

 private:
  UnixSocketPlacement(std::string path, mode_t mode, std::string dir);
  const std::string path_;
  const mode_t mode_;
  const std::string private_dir_;
  const std::string private_socket_;
  ino_t published_inode_ = 0;  // 0: not published
};

}  // namespace tensord

#endif  // TENSORD_SERVER_LISTEN_ADDRESS_H_
