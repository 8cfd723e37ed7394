// Blocking socket helpers for tests that speak a raw TCP or socket-pair
// protocol (the bulk socket): whole sends, reads up to a count or the end
// of the stream, a connection to a loopback port.
#ifndef TENSORD_TESTS_SOCKET_IO_H_
#define TENSORD_TESTS_SOCKET_IO_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <string>

namespace tensord {
namespace testing {

// False when the peer went away first.
inline bool SendAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t r = send(fd, c, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

inline bool SendAll(int fd, const std::string& bytes) {
  return SendAll(fd, bytes.data(), bytes.size());
}

// The bytes read until `n` or the end of the stream.
inline std::string RecvUpTo(int fd, size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = recv(fd, out.data() + got, n - got, 0);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

// A socket connected to 127.0.0.1:`port`, or -1.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return -1;
  }
  return fd;
}

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_SOCKET_IO_H_
