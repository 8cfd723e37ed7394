#include "tests/fuzz/session_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "proto/command_ring.h"
#include "runtime/core/mutex.h"
#include "runtime/cpu_device.h"
#include "runtime/device.h"
#include "server/daemon_log.h"
#include "server/session_manager.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace fuzz {
namespace {

[[noreturn]] void OracleFailed(const std::string& what) {
  std::fprintf(stderr, "session fuzz oracle failed: %s\n", what.c_str());
  std::abort();
}

// A wire status the daemon sent: a known code and a message saying why.
void CheckStatus(const v1::Status& s, const char* where) {
  if (s.code() == 0) return;
  const auto code = static_cast<absl::StatusCode>(s.code());
  if (code == absl::StatusCode::kInternal ||
      code == absl::StatusCode::kUnknown) {
    OracleFailed(std::string(where) +
                 ": internal error reached the client: " + s.DebugString());
  }
  if (s.message().empty()) {
    OracleFailed(std::string(where) +
                 ": error without a message: " + s.DebugString());
  }
}

// Checks each reply as it comes and keeps nothing (sessions can be long).
class CheckingSink : public FrameSink {
 public:
  ~CheckingSink() override {
    if (std::getenv("TENSORD_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "session: %d frames, %d errors\n", frames_, errors_);
    }
  }
  void Send(v1::ServerFrame frame) override {
    ++frames_;
    if (frame.has_error() ||
        (frame.has_sync_done() && frame.sync_done().error().code() != 0)) {
      ++errors_;
      if (std::getenv("TENSORD_FUZZ_VERBOSE") != nullptr) {
        std::fprintf(stderr, "  %s\n", frame.ShortDebugString().c_str());
      }
    }
    if (frame.has_error()) CheckStatus(frame.error().status(), "Error frame");
    if (frame.has_sync_done()) CheckStatus(frame.sync_done().error(), "Sync");
    if (frame.has_ack()) {
      for (const auto& meta : frame.ack().created()) {
        CheckStatus(meta.error(), "Ack meta");
      }
    }
  }
  void End(absl::Status) override {}

 private:
  int frames_ = 0, errors_ = 0;  // the executor's thread only
};

// Resumes reading when the session's full queue drains (backpressure).
struct Drain {
  Mutex mu;
  bool paused ABSL_GUARDED_BY(mu) = false;
};

struct Daemon {
  std::unique_ptr<DeviceRegistry> devices;
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<SessionManager> manager;
};

Daemon& TheDaemon() {
  // Never destroyed: sessions' threads are joined per input, and the
  // manager's reaper lives as long as the process.
  static Daemon* daemon = [] {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    spdlog::set_level(spdlog::level::err);
    // As the daemon logs (Note [Client text]): fuzzed client text reaches
    // the errors logged, and the formatter is fuzzed with it.
    spdlog::set_formatter(EscapingLogFormatter());
    auto* d = new Daemon;
    // The CPU's capacity bounded (Note [Host capacity]): a fuzzed Put or op
    // may ask for a tensor of many GiB, which no quota stops in insecure mode;
    // it is refused at 1 GiB, inside libFuzzer's RSS limit.
    std::vector<std::unique_ptr<Device>> cpu;
    cpu.push_back(MakeCpuDevice(size_t{1} << 30));
    d->devices = std::make_unique<DeviceRegistry>(std::move(cpu));
    d->auth = Authenticator::Insecure();
    SessionLimits limits;
    limits.resume_grace = absl::Hours(1);  // the driver ends sessions itself
    limits.max_queued_batches = 8;         // exercise backpressure
    d->manager = std::make_unique<SessionManager>(d->devices.get(),
                                                  d->auth.get(), limits);
    return d;
  }();
  return *daemon;
}

void CheckMemoryReturned(uint64_t number) {
  for (const auto& device : TheDaemon().devices->devices()) {
    const int64_t held = device->allocator()->SessionBytes(number);
    if (held != 0) {
      OracleFailed("session #" + std::to_string(number) + " still holds " +
                   std::to_string(held) + " bytes on " + device->name() +
                   " after it ended");
    }
  }
}

}  // namespace

std::vector<v1::ClientFrame> ParseFrames(const uint8_t* data, size_t size) {
  std::vector<v1::ClientFrame> frames;
  google::protobuf::io::CodedInputStream in(data, static_cast<int>(size));
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag != ((1 << 3) | 2)) break;  // field 1, length-delimited
    uint32_t length = 0;
    if (!in.ReadVarint32(&length)) break;
    const auto limit = in.PushLimit(static_cast<int>(length));
    v1::ClientFrame frame;
    const bool ok =
        frame.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    in.PopLimit(limit);
    if (!ok) break;
    frames.push_back(std::move(frame));
  }
  return frames;
}

std::string SerializeFrames(const std::vector<v1::ClientFrame>& frames) {
  std::string out;
  for (const auto& frame : frames) {
    const std::string bytes = frame.SerializeAsString();
    out.push_back(static_cast<char>((1 << 3) | 2));
    for (uint64_t n = bytes.size();; n >>= 7) {
      if (n < 0x80) {
        out.push_back(static_cast<char>(n));
        break;
      }
      out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    }
    out += bytes;
  }
  return out;
}

void RunSession(const std::vector<v1::ClientFrame>& frames) {
  if (frames.empty() || !frames[0].has_hello()) return;
  Daemon& daemon = TheDaemon();
  SessionManager& manager = *daemon.manager;
  auto sink = std::make_shared<CheckingSink>();
  v1::Hello hello = frames[0].hello();
  hello.clear_resume_session_id();  // resumes are driven below
  auto opened = manager.Open(hello, "", "fuzz", sink);
  if (!opened.ok()) return;  // e.g. a wrong protocol version
  std::shared_ptr<Session> session = *opened;
  const uint64_t number = session->params().number;
  for (const auto& d : daemon.devices->devices()) {
    d->allocator()->SetSessionQuota(number, kSessionQuota);
  }
  auto drain = std::make_shared<Drain>();
  session->SetOnDrain([drain] {
    MutexLock lock(&drain->mu);
    drain->paused = false;
  });
  for (size_t i = 1; i < frames.size(); ++i) {
    const v1::ClientFrame& frame = frames[i];
    if (frame.has_hello()) {
      // A later Hello stands for "the stream dropped; the client resumes
      // with this Hello's received seq" (Note [Resume]).
      manager.StreamEnded(session, sink.get(), /*dropped=*/true);
      sink = std::make_shared<CheckingSink>();
      v1::Hello resume = frame.hello();
      resume.set_protocol_version(kProtocolVersion);
      resume.set_resume_session_id(session->params().id);
      resume.set_resume_secret(session->params().resume_secret);
      auto resumed = manager.Open(resume, "", "fuzz", sink);
      if (!resumed.ok()) break;  // e.g. DATA_LOSS: the replay was evicted
      continue;
    }
    if (!frame.has_batch()) continue;  // the reactor answers with an Error
    {
      // Paused before submitting: the drain callback may run at once.
      MutexLock lock(&drain->mu);
      drain->paused = true;
    }
    // As the transport does behind a short outbound queue: a cheap batch
    // with a sync point runs here (Note [Inline batches]), so the fuzzer
    // drives the dry run too.
    const bool more = session->Submit(frame.batch(), /*may_run_inline=*/true);
    MutexLock lock(&drain->mu);
    if (more) {
      drain->paused = false;
    } else {
      drain->mu.Await(absl::Condition(
          +[](Drain* d)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(d->mu) { return !d->paused; },
          drain.get()));
    }
  }
  session->Close();
  session->WaitDone();
  manager.Remove(session->params().id);
  session.reset();
  CheckMemoryReturned(number);
}

void RunRingSession(const uint8_t* data, size_t size) {
  Daemon& daemon = TheDaemon();
  SessionManager& manager = *daemon.manager;
  auto sink = std::make_shared<CheckingSink>();
  v1::Hello hello;
  hello.set_protocol_version(kProtocolVersion);
  hello.set_shm_transfer(true);
  hello.set_command_ring(true);
  auto opened = manager.Open(hello, "", "fuzz", sink);
  if (!opened.ok())
    OracleFailed("a ring session: " + opened.status().ToString());
  std::shared_ptr<Session> session = *opened;
  const ShmRegion* region = session->shm();
  if (region == nullptr || region->ring_bytes() == 0) {
    OracleFailed("a session that asked for a command ring has none");
  }
  const uint64_t number = session->params().number;
  for (const auto& d : daemon.devices->devices()) {
    d->allocator()->SetSessionQuota(number, kSessionQuota);
  }
  // The input is the ring's bytes from position 0, all published at once;
  // the stream's end (Close) makes the reader read them before it ends.
  const size_t n = std::min(size, region->ring_bytes());
  std::memcpy(region->ring_records(), data, n);
  command_ring::Control(region->ring_control())
      .head->store(n, std::memory_order_seq_cst);
  session->Close();
  session->WaitDone();
  manager.Remove(session->params().id);
  session.reset();
  CheckMemoryReturned(number);
}

}  // namespace fuzz
}  // namespace tensord
