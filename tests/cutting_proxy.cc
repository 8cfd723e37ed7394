#include "tests/cutting_proxy.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tensord {
namespace testing {

CuttingProxy::CuttingProxy(const std::string& upstream) {
  const size_t colon = upstream.rfind(':');
  upstream_port_ = std::stoi(upstream.substr(colon + 1));
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  listen(listen_fd_, 16);
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  address_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

CuttingProxy::~CuttingProxy() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    CutLocked();
  }
  cv_.notify_all();
  shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  for (std::thread& t : pumps_) t.join();
  for (int fd : fds_) close(fd);
  close(listen_fd_);
}

void CuttingProxy::CutAll() {
  std::lock_guard<std::mutex> lock(mu_);
  CutLocked();
}

void CuttingProxy::CutAfter(Direction direction, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  armed_direction_ = direction;
  armed_left_ = bytes;
}

void CuttingProxy::Hold(bool hold) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = hold;
  }
  cv_.notify_all();
}

int CuttingProxy::cuts() {
  std::lock_guard<std::mutex> lock(mu_);
  return cuts_;
}

sockaddr_in CuttingProxy::Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

void CuttingProxy::CutLocked() {
  for (auto& [a, b] : live_) {
    shutdown(a, SHUT_RDWR);
    shutdown(b, SHUT_RDWR);
  }
  if (!live_.empty()) ++cuts_;
  live_.clear();
}

void CuttingProxy::AcceptLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !held_ || stopping_; });
      if (stopping_) return;
    }
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) return;  // shut down
    const int daemon = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(upstream_port_);
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(client);
    fds_.push_back(daemon);
    if (stopping_ ||
        connect(daemon, reinterpret_cast<sockaddr*>(&addr), sizeof(addr))) {
      shutdown(client, SHUT_RDWR);
      continue;
    }
    live_.emplace_back(client, daemon);
    pumps_.emplace_back([this, client, daemon] { Pump(client, daemon, kUp); });
    pumps_.emplace_back(
        [this, client, daemon] { Pump(daemon, client, kDown); });
  }
}

void CuttingProxy::Pump(int from, int to, Direction direction) {
  std::vector<char> buf(64 << 10);
  while (true) {
    const ssize_t n = read(from, buf.data(), buf.size());
    if (n <= 0) break;
    size_t size = static_cast<size_t>(n);
    bool cut = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (armed_ && armed_direction_ == direction) {
        if (armed_left_ <= size) {
          size = armed_left_;
          cut = true;
          armed_ = false;
        } else {
          armed_left_ -= size;
        }
      }
    }
    for (size_t done = 0; done < size;) {
      const ssize_t w = send(to, buf.data() + done, size - done, MSG_NOSIGNAL);
      if (w <= 0) return;
      done += static_cast<size_t>(w);
    }
    if (cut) {
      CutAll();
      return;
    }
  }
  shutdown(to, SHUT_WR);  // pass the half-close on
}

}  // namespace testing
}  // namespace tensord
