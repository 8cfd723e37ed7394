#include "server/hello_acceptor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// How long a connection may take to send its hello, and how many may be
// sending theirs at once.
constexpr absl::Duration kHelloTime = absl::Seconds(2);
constexpr size_t kMaxArriving = 64;

int Millis(absl::Duration d) {
  return static_cast<int>(absl::ToInt64Milliseconds(d));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HelloAcceptor>> HelloAcceptor::Start(
    int listen_fd, std::string what, Hooks hooks) {
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    close(listen_fd);
    return absl::InternalError(absl::StrCat(what, ": eventfd failed"));
  }
  return std::unique_ptr<HelloAcceptor>(
      new HelloAcceptor(listen_fd, wake, std::move(what), std::move(hooks)));
}

HelloAcceptor::HelloAcceptor(int fd, int wake_fd, std::string what, Hooks hooks)
    : fd_(fd),
      wake_fd_(wake_fd),
      what_(std::move(what)),
      hooks_(std::move(hooks)) {
  thread_ = std::thread([this] { AcceptLoop(); });
}

HelloAcceptor::~HelloAcceptor() {
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
    spdlog::warn("{}: cannot wake the listener", what_);
  }
  thread_.join();
  close(fd_);
  close(wake_fd_);
}

void HelloAcceptor::AcceptLoop() {
  // Connections whose hello is still arriving: read as their bytes come, so
  // a silent one holds only its own slot, for at most kHelloTime.
  struct Arriving {
    int fd;
    absl::Time deadline;
    std::unique_ptr<HelloStream> stream;  // null: the bare socket
    short want = POLLIN;                  // what its next read waits for
    size_t got = 0;
    char hello[kMaxHelloBytes];
  };
  auto wanted = [this](const Arriving& a) {
    return std::min(hooks_.hello_bytes(a.hello, a.got), kMaxHelloBytes);
  };
  // Reads what has arrived, only up to the hello's length as known so far (a
  // client sends nothing more until it has the answer); false once the
  // connection closed or failed.
  auto read = [&wanted](Arriving& a) {
    while (a.got < wanted(a)) {
      char* dst = a.hello + a.got;
      const size_t len = wanted(a) - a.got;
      const ssize_t r = a.stream != nullptr
                            ? a.stream->ReadSome(dst, len, &a.want)
                            : recv(a.fd, dst, len, MSG_DONTWAIT);
      if (r > 0) {
        a.got += static_cast<size_t>(r);
        continue;
      }
      return r < 0 && (errno == EAGAIN || errno == EINTR);
    }
    return true;
  };
  auto drop = [](Arriving& a) {
    if (a.stream == nullptr) close(a.fd);
    a.stream.reset();
  };
  std::vector<Arriving> arriving;
  std::vector<pollfd> polled;
  while (true) {
    polled.assign({{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}});
    absl::Time first = absl::InfiniteFuture();
    for (const Arriving& a : arriving) {
      polled.push_back({a.fd, a.want, 0});
      first = std::min(first, a.deadline);
    }
    const int timeout =
        arriving.empty() ? -1 : std::max(0, Millis(first - absl::Now())) + 1;
    if (poll(polled.data(), polled.size(), timeout) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("{}: poll failed: {}", what_, strerror(errno));
      break;
    }
    if (polled[1].revents != 0) break;
    const absl::Time now = absl::Now();
    std::vector<Arriving> still;
    for (size_t i = 0; i < arriving.size(); ++i) {
      Arriving& a = arriving[i];
      if (polled[i + 2].revents != 0 && !read(a)) {
        drop(a);
        continue;
      }
      if (a.got > 0 && a.got == wanted(a)) {
        const absl::string_view hello(a.hello, a.got);
        if (a.stream != nullptr) {
          hooks_.admit_stream(std::move(a.stream), hello);
        } else {
          hooks_.admit(a.fd, hello);
        }
      } else if (now >= a.deadline) {
        drop(a);
      } else {
        still.push_back(std::move(a));
      }
    }
    arriving.swap(still);
    if (polled[0].revents != 0) {
      const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn >= 0 && arriving.size() >= kMaxArriving) {
        close(conn);  // a flood of silent connections: the newest go
      } else if (conn >= 0 && hooks_.open) {
        std::unique_ptr<HelloStream> stream = hooks_.open(conn);
        if (stream != nullptr) {
          arriving.push_back({conn, now + kHelloTime, std::move(stream)});
        }
      } else if (conn >= 0) {
        arriving.push_back({conn, now + kHelloTime});
      }
    }
  }
  for (Arriving& a : arriving) drop(a);
}

}  // namespace tensord
