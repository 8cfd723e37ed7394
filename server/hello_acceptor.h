// The accept loop of the daemon's side listeners (the bulk sockets',
// server/bulk_listener.h, and cross-memory attach's binding socket,
// server/cma_binder.h): accepts connections on a listening socket and reads
// each one's fixed-format hello as its bytes arrive, up to 64 connections at
// once and each within 2 s, so that a silent connection holds only its own
// slot and delays no other. A complete hello goes to `admit`, which then
// owns the connection; anything else is closed without an answer. A listener
// may read through a stream of its own over each connection (`open`: TLS,
// whose handshake then runs in the same loop, within the same 2 s).
//
// Ownership: owns the listening socket and its accept thread.
// Thread safety: the hooks run on the accept thread, one at a time.
#ifndef TENSORD_SERVER_HELLO_ACCEPTOR_H_
#define TENSORD_SERVER_HELLO_ACCEPTOR_H_

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tensord {

// A connection whose hello is read through something other than the bare
// socket (server/bulk_listener.cc: TLS). Destroying it closes it.
class HelloStream {
 public:
  virtual ~HelloStream() = default;
  virtual int fd() const = 0;
  // Up to `len` bytes without blocking: the count (> 0); 0 when the peer
  // closed; -1 with errno set, EAGAIN meaning: poll for `*want`, then again.
  virtual ssize_t ReadSome(char* dst, size_t len, short* want) = 0;
};

class HelloAcceptor {
 public:
  // The largest hello any listener reads.
  static constexpr size_t kMaxHelloBytes = 64;

  struct Hooks {
    // How long the hello whose first `got` bytes are `hello` is (at most
    // kMaxHelloBytes; called as bytes arrive, `got` never past the answer).
    std::function<size_t(const char* hello, size_t got)> hello_bytes;
    // A complete hello arrived on `fd`; `admit` owns (closes) `fd`.
    std::function<void(int fd, absl::string_view hello)> admit;
    // Optional: each accepted socket (owned from here) as the stream its
    // hello is read through, or null to close it; then complete hellos go to
    // `admit_stream` (which owns the stream) instead of `admit`.
    std::function<std::unique_ptr<HelloStream>(int fd)> open;
    std::function<void(std::unique_ptr<HelloStream> stream,
                       absl::string_view hello)>
        admit_stream;
  };

  // Accepts on `listen_fd` (bound and listening; owned from here) until
  // destroyed. `what` names the listener in log lines.
  static absl::StatusOr<std::unique_ptr<HelloAcceptor>> Start(int listen_fd,
                                                              std::string what,
                                                              Hooks hooks);
  ~HelloAcceptor();  // stops accepting, joins the thread, closes the socket
  HelloAcceptor(const HelloAcceptor&) = delete;
  HelloAcceptor& operator=(const HelloAcceptor&) = delete;

 private:
  HelloAcceptor(int fd, int wake_fd, std::string what, Hooks hooks);
  void AcceptLoop();

  const int fd_;
  const int wake_fd_;  // an eventfd: the destructor's stop signal
  const std::string what_;
  const Hooks hooks_;
  std::thread thread_;
};

}  // namespace tensord

#endif  // TENSORD_SERVER_HELLO_ACCEPTOR_H_
