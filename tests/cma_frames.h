// Cross-memory attach in raw frames (docs/protocol.md "Cross-memory
// attach"), shared by tests/cma_protocol_test.cc and the security suite's
// attacks on it (tests/security/cma_*_test.cc): Puts and Gets that name an
// address for the daemon to copy, and a child process that binds a session
// to itself (optionally as another uid) and then stays or exits on demand.
#ifndef TENSORD_TESTS_CMA_FRAMES_H_
#define TENSORD_TESTS_CMA_FRAMES_H_

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/cma_bind.h"
#include "tests/raw_session.h"

namespace tensord {
namespace testing {

// A Hello that asks for the region (and so, from a daemon that offers it,
// a cross-memory-attach ticket).
inline v1::Hello ShmHello() {
  v1::Hello hello;
  hello.set_shm_transfer(true);
  return hello;
}

// A Put of `bytes` bytes at `address` (in whichever process the daemon
// copies from) as a float32 tensor of bytes / 4 elements; its handle.
inline uint64_t PutByCma(RawSession& raw, uint64_t address, uint64_t bytes) {
  const uint64_t handle = raw.NewHandle();
  v1::Put* put = raw.Add()->mutable_put();
  put->set_handle(handle);
  put->set_dtype(v1::FLOAT32);
  put->add_shape(static_cast<int64_t>(bytes / sizeof(float)));
  put->set_last(true);
  v1::CmaSpan* span = put->mutable_payload()->mutable_cma();
  span->set_address(address);
  span->set_size(bytes);
  return handle;
}
inline uint64_t PutByCma(RawSession& raw, const std::vector<float>& values) {
  return PutByCma(raw, reinterpret_cast<uint64_t>(values.data()),
                  values.size() * sizeof(float));
}

// A Get of `handle` written at `address` (`capacity` bytes); its request.
inline uint64_t GetByCma(RawSession& raw, uint64_t handle, uint64_t address,
                         uint64_t capacity) {
  const uint64_t request = raw.NewRequest();
  v1::Get* get = raw.Add()->mutable_get();
  get->set_handle(handle);
  get->set_request_id(request);
  v1::CmaSpan* span = get->mutable_into()->mutable_cma();
  span->set_address(address);
  span->set_size(capacity);
  return request;
}
inline uint64_t GetByCma(RawSession& raw, uint64_t handle,
                         std::vector<float>* into) {
  return GetByCma(raw, handle, reinterpret_cast<uint64_t>(into->data()),
                  into->size() * sizeof(float));
}

// The error a Put's Ack gave its handle ("" when none).
inline std::string ErrorOf(const RawSession::Reply& reply, uint64_t handle) {
  auto it = reply.created.find(handle);
  return it == reply.created.end() ? "(no Ack)" : it->second.error().message();
}

// The error a Get's request got ("(none)" when it got data).
inline std::string RequestErrorOf(const RawSession::Reply& reply,
                                  uint64_t request) {
  for (const v1::Error& e : reply.errors) {
    if (e.request_id() == request) return e.status().message();
  }
  return "(none)";
}

// The session goes on: a stream Put and Get of the same session work.
inline void ExpectSessionWorks(RawSession& raw) {
  const uint64_t handle = raw.PutFloats({3});
  const uint64_t request = raw.NewRequest();
  v1::Get* get = raw.Add()->mutable_get();
  get->set_handle(handle);
  get->set_request_id(request);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(reply.data[request], std::string(12, '\0'));
}

// A forked child that presents `ticket` at `socket` (as `uid` when it is
// not -1: the test runs as root), reports whether it was bound, and then
// waits until Exit() or Kill() (its memory is the parent's as at fork:
// `values` below lies at the same address in it).
class BindingChild {
 public:
  BindingChild(const std::string& socket, const std::string& ticket,
               int uid = -1) {
    int report[2], go[2];
    EXPECT_EQ(pipe(report), 0);
    EXPECT_EQ(pipe(go), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(report[0]);
      close(go[1]);
      char bound = 2;                       // could not become `uid`
      if (uid >= 0) setgroups(0, nullptr);  // may fail: the uid is the test
      if (uid < 0 || (setgid(uid) == 0 && setuid(uid) == 0)) {
        bound = CmaBindThisProcess(socket, ticket, 5000) ? 1 : 0;
      }
      if (write(report[1], &bound, 1) != 1) _exit(3);
      char order = 0;
      // Exit(): the pipe closes; the child exits without touching the
      // parent's state (no destructors, no atexit).
      while (read(go[0], &order, 1) > 0) {
      }
      _exit(0);
    }
    close(report[1]);
    close(go[0]);
    go_ = go[1];
    char bound = 0;
    answer_ = read(report[0], &bound, 1) == 1 ? bound : -1;
    close(report[0]);
  }
  ~BindingChild() { Kill(); }
  // 1: bound; 0: refused; 2: could not become the uid asked for.
  int answer() const { return answer_; }
  pid_t pid() const { return pid_; }
  // Lets the child exit and reaps it: its pid may be reused from here.
  void Exit() {
    if (pid_ <= 0) return;
    close(go_);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    Exit();
  }

  std::vector<float> values = std::vector<float>(1024, 0.25f);

 private:
  pid_t pid_ = 0;
  int go_ = -1;
  int answer_ = -1;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_CMA_FRAMES_H_
