// A TCP proxy for resume tests: it pipes connections from 127.0.0.1:<port>
// to an upstream daemon and cuts them when the test says (now, or once so
// many more bytes have gone one way). Cuts are shutdown()s of both sockets
// of every live connection: both peers see the connection drop, as with a
// broken network path.
//
// Threading: the public methods may be called from any thread. The proxy
// owns an accepting thread and two pump threads per connection, all joined
// (and every socket closed) by the destructor.
#ifndef TENSORD_TESTS_CUTTING_PROXY_H_
#define TENSORD_TESTS_CUTTING_PROXY_H_

#include <netinet/in.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tensord {
namespace testing {

class CuttingProxy {
 public:
  enum Direction { kUp = 0, kDown = 1 };  // client->daemon, daemon->client

  // Listens on a free loopback port; `upstream` is "host:port" (the port is
  // dialled on 127.0.0.1).
  explicit CuttingProxy(const std::string& upstream);
  ~CuttingProxy();
  CuttingProxy(const CuttingProxy&) = delete;
  CuttingProxy& operator=(const CuttingProxy&) = delete;

  // "127.0.0.1:<port>", for the client to dial.
  const std::string& address() const { return address_; }

  void CutAll();
  // Cuts once `bytes` more bytes have gone in `direction`.
  void CutAfter(Direction direction, size_t bytes);
  // While held, new connections wait in the listen backlog.
  void Hold(bool hold);
  // How many cuts found a live connection.
  int cuts();

 private:
  static sockaddr_in Loopback(int port);
  void CutLocked();
  void AcceptLoop();
  void Pump(int from, int to, Direction direction);

  int listen_fd_ = -1;
  int upstream_port_ = 0;
  std::string address_;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  bool stopping_ = false;
  bool held_ = false;
  bool armed_ = false;
  Direction armed_direction_ = kDown;
  size_t armed_left_ = 0;
  int cuts_ = 0;
  std::vector<std::pair<int, int>> live_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_CUTTING_PROXY_H_
