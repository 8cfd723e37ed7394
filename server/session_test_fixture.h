// The session core driven in process (no network): a sink that records
// frames and a fixture with one open session on the CPU, shared by the
// session core's tests (session_test.cc, command_streams_test.cc).
#ifndef TENSORD_SERVER_SESSION_TEST_FIXTURE_H_
#define TENSORD_SERVER_SESSION_TEST_FIXTURE_H_

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/mutex.h"
#include "runtime/ops/op_table.h"
#include "server/daemon_log.h"
#include "server/session_manager.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace testing_util {

class RecordingSink : public FrameSink {
 public:
  void Send(v1::ServerFrame frame) override {
    MutexLock lock(&mu_);
    frames_.push_back(std::move(frame));
    senders_.push_back(std::this_thread::get_id());
    cv_.SignalAll();
  }
  void End(absl::Status status) override {
    MutexLock lock(&mu_);
    ended_ = true;
    status_ = status;
  }
  // Waits until a frame matching `pred` arrived; returns it.
  template <typename Pred>
  v1::ServerFrame WaitFor(Pred pred) {
    return WaitForWithSender(pred).first;
  }
  // The same, with the thread that sent the frame.
  template <typename Pred>
  std::pair<v1::ServerFrame, std::thread::id> WaitForWithSender(Pred pred) {
    MutexLock lock(&mu_);
    for (size_t i = 0;; cv_.Wait(&mu_)) {
      for (; i < frames_.size(); ++i) {
        if (pred(frames_[i])) return {frames_[i], senders_[i]};
      }
    }
  }
  bool ended() {
    MutexLock lock(&mu_);
    return ended_;
  }
  absl::Status status() {
    MutexLock lock(&mu_);
    return status_;
  }
  // The frames received so far.
  std::vector<v1::ServerFrame> frames() {
    MutexLock lock(&mu_);
    return frames_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::vector<v1::ServerFrame> frames_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> senders_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// Logs as the daemon does (Note [Client text], server/daemon_log.h): the
// sessions under test log client names, call sites and kill reasons, and a
// test's log must not be forgeable by the text it feeds them either. Once
// per process; call it from fixtures that make their own SessionManager.
inline void UseDaemonLogFormat() {
  static const bool installed = [] {
    spdlog::set_formatter(EscapingLogFormatter());
    return true;
  }();
  (void)installed;
}

inline uint32_t OpId(const std::string& name) {
  const auto& table = OpTable();
  for (uint32_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return i;
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() : SessionTest(v1::Hello()) {}
  // A session opened with `hello` (its protocol version is filled in).
  explicit SessionTest(v1::Hello hello)
      : devices_(DeviceRegistry::Create()),
        auth_(Authenticator::Insecure()),
        manager_(devices_.get(), auth_.get()),
        sink_(std::make_shared<RecordingSink>()) {
    UseDaemonLogFormat();
    hello.set_protocol_version(kProtocolVersion);
    auto s = manager_.Open(hello, "", "test", sink_);
    EXPECT_TRUE(s.ok()) << s.status();
    session_ = *s;
  }
  ~SessionTest() override {
    session_->Close();
    session_->WaitDone();
  }
  v1::Command* Add(v1::Batch* b) {
    v1::Command* c = b->add_commands();
    c->set_seq(++seq_);
    return c;
  }
  void Full(v1::Batch* b, uint64_t out, std::vector<int64_t> shape, double v) {
    v1::Call* call = Add(b)->mutable_call();
    call->set_op_id(OpId("full"));
    for (int64_t s : shape)
      (*call->mutable_attrs())["shape"].mutable_ints()->add_values(s);
    (*call->mutable_attrs())["fill_value"].set_f(v);
    call->add_outputs(out);
  }
  void Binary(v1::Batch* b, const std::string& op, uint64_t x, uint64_t y,
              uint64_t out, const std::string& site = "") {
    v1::Call* call = Add(b)->mutable_call();
    call->set_op_id(OpId(op));
    call->add_inputs(x);
    call->add_inputs(y);
    call->add_outputs(out);
    call->set_site(site);
  }
  std::vector<float> GetFloats(uint64_t handle) {
    v1::Batch b;
    Add(&b)->mutable_get()->set_handle(handle);
    b.mutable_commands(0)->mutable_get()->set_request_id(++request_);
    const uint64_t rid = request_;
    session_->Submit(b);
    std::string bytes;
    while (true) {
      v1::ServerFrame f = sink_->WaitFor([&](const v1::ServerFrame& f) {
        return (f.has_data() && f.data().request_id() == rid &&
                f.data().offset() == bytes.size()) ||
               (f.has_error() && f.error().request_id() == rid);
      });
      if (f.has_error()) {
        last_error_ = f.error().status();
        return {};
      }
      bytes += f.data().payload().data();
      if (f.data().last()) break;
    }
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }

  std::unique_ptr<DeviceRegistry> devices_;
  std::unique_ptr<Authenticator> auth_;
  SessionManager manager_;
  std::shared_ptr<RecordingSink> sink_;
  std::shared_ptr<Session> session_;
  uint64_t seq_ = 0, request_ = 0;
  v1::Status last_error_;
};

}  // namespace testing_util
}  // namespace tensord

#endif  // TENSORD_SERVER_SESSION_TEST_FIXTURE_H_
