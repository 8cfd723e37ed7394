// Note [Async downloads] (and [Async uploads]) on a real GPU: a Get of a large
// CUDA tensor is a copy into pinned staging on the session's stream, and the
// executor goes on with the session's later commands before it completes. The
// test holds the session's stream with a host function it releases itself, so
// the facts are orderings (the later batch's Ack arrives while the copy cannot
// have run; the data is the value at the Get's position), not timings. Skips,
// saying why, without a CUDA device.
#include "gtest/gtest.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/mutex.h"
#include "runtime/cuda_discovery.h"
#include "runtime/ops/op_table.h"
#include "server/session.h"

namespace tensord {
namespace {

class FrameLog : public FrameSink {
 public:
  void Send(v1::ServerFrame frame) override {
    MutexLock lock(&mu_);
    frames_.push_back(std::move(frame));
  }
  void End(absl::Status) override {}
  template <typename Pred>
  v1::ServerFrame WaitFor(Pred pred) {
    MutexLock lock(&mu_);
    for (size_t i = 0;; ++i) {
      auto more = [this, i]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return frames_.size() > i;
      };
      mu_.Await(absl::Condition(&more));
      if (pred(frames_[i])) return frames_[i];
    }
  }
  // Every Error frame so far, for a failure's message.
  std::string Errors() {
    MutexLock lock(&mu_);
    std::string out;
    for (const auto& f : frames_) {
      if (f.has_error()) out += f.error().DebugString();
    }
    return out;
  }
  bool Any(uint64_t data_request) {
    MutexLock lock(&mu_);
    for (const auto& f : frames_) {
      if (f.has_data() && f.data().request_id() == data_request) return true;
    }
    return false;
  }

 private:
  Mutex mu_;
  std::vector<v1::ServerFrame> frames_ ABSL_GUARDED_BY(mu_);
};

// Blocks the stream it is launched on until Open (a host function may wait;
// it must not call CUDA).
struct Gate {
  Mutex mu;
  bool open ABSL_GUARDED_BY(mu) = false;
  static void CUDART_CB Wait(void* self) {
    Gate* g = static_cast<Gate*>(self);
    MutexLock lock(&g->mu);
    g->mu.Await(absl::Condition(&g->open));
  }
  void Open() {
    MutexLock lock(&mu);
    open = true;
  }
};

uint32_t OpId(const std::string& name) {
  const auto& table = OpTable();
  for (uint32_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return i;
  }
  ADD_FAILURE() << "no op " << name;
  return 0;
}

TEST(CudaGetTest, LaterCommandsRunWhileALargeGetIsInFlight) {
  auto devices = DeviceRegistry::Create();
  Device* cuda = devices->Find("cuda:0");
  if (cuda == nullptr) {
    std::string why;
    DiscoverCudaDevices(&why);
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  auto log = std::make_shared<FrameLog>();
  SessionParams params;
  params.id = "cuda-get";
  params.number = 11;
  params.devices = devices.get();
  Session session(std::move(params));
  ASSERT_TRUE(session.Attach(log, 0, v1::ServerFrame()).ok());
  uint64_t seq = 0;
  auto add = [&](v1::Batch* b) {
    v1::Command* c = b->add_commands();
    c->set_seq(++seq);
    return c;
  };
  auto wait_ack = [&](uint64_t s) {
    log->WaitFor([s](const v1::ServerFrame& f) {
      return f.has_ack() && f.ack().last_seq() >= s;
    });
  };
  // Collects a Get's bytes as floats.
  auto data = [&](uint64_t request) {
    std::string bytes;
    while (true) {
      v1::ServerFrame f = log->WaitFor([&](const v1::ServerFrame& f) {
        return (f.has_data() && f.data().request_id() == request &&
                f.data().offset() == bytes.size()) ||
               (f.has_error() && f.error().request_id() == request);
      });
      EXPECT_FALSE(f.has_error())
          << f.error().status().message() << "\nevery error: " << log->Errors();
      if (f.has_error()) return std::vector<float>{};
      bytes += f.data().payload().data();
      if (f.data().last()) break;
    }
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  };

  const int64_t rows = 2048, cols = 4096;  // 32 MiB: many Data chunks
  v1::Batch b1;
  v1::Call* full = add(&b1)->mutable_call();
  full->set_op_id(OpId("full"));
  (*full->mutable_attrs())["shape"].mutable_ints()->add_values(rows);
  (*full->mutable_attrs())["shape"].mutable_ints()->add_values(cols);
  (*full->mutable_attrs())["fill_value"].set_f(3.0);
  (*full->mutable_attrs())["device"].set_s("cuda:0");  // the default is cpu
  full->add_outputs(1);
  // Warm-up: the same allocations as below, so that with the stream held
  // nothing needs a new device segment or pinned buffer (which might wait
  // for the device), and a first Get that fills the staging cache.
  for (uint64_t out : {4, 5}) {
    v1::Call* warm = add(&b1)->mutable_call();
    warm->set_op_id(OpId("add"));
    warm->add_inputs(1);
    warm->add_inputs(1);
    warm->add_outputs(out);
  }
  v1::Get* first = add(&b1)->mutable_get();
  first->set_handle(1);
  first->set_request_id(99);
  add(&b1)->mutable_release()->add_handles(4);
  add(&b1)->mutable_release()->add_handles(5);
  session.Submit(b1);
  EXPECT_EQ(data(99), std::vector<float>(rows * cols, 3.0f));

  // Hold the session's stream (Note [Session streams]: the executor's).
  auto stream = cuda->SessionStream(11);
  ASSERT_TRUE(stream.ok()) << stream.status();
  Gate gate;
  ASSERT_EQ(
      cudaLaunchHostFunc(static_cast<cudaStream_t>(*stream), Gate::Wait, &gate),
      cudaSuccess);

  // The Get, then an in-place write of the same tensor and another op.
  v1::Batch b2;
  v1::Get* get = add(&b2)->mutable_get();
  get->set_handle(1);
  get->set_request_id(100);
  v1::Call* zero = add(&b2)->mutable_call();
  zero->set_op_id(OpId("zero_"));
  zero->add_inputs(1);
  zero->add_outputs(6);  // handles only increase: 4 and 5 were the warm-up's
  v1::Call* sum = add(&b2)->mutable_call();
  sum->set_op_id(OpId("add"));
  sum->add_inputs(1);
  sum->add_inputs(1);
  sum->add_outputs(7);
  session.Submit(b2);
  wait_ack(seq);  // the executor went past the Get with the stream held
  EXPECT_FALSE(log->Any(100));
  gate.Open();

  const std::vector<float> got = data(100);
  ASSERT_EQ(got.size(), static_cast<size_t>(rows * cols));
  size_t wrong = 0;
  for (float v : got) wrong += v != 3.0f;
  EXPECT_EQ(wrong, 0u) << "the Get must see the value before zero_";

  v1::Batch b3;
  v1::Get* after = add(&b3)->mutable_get();
  after->set_handle(7);
  after->set_request_id(101);
  session.Submit(b3);
  const std::vector<float> zeros = data(101);
  ASSERT_EQ(zeros.size(), static_cast<size_t>(rows * cols));
  wrong = 0;
  for (float v : zeros) wrong += v != 0.0f;
  EXPECT_EQ(wrong, 0u);
  session.Close();
  session.WaitDone();
}

// Note [Async uploads]: a chunked Put of a CUDA tensor is staged through
// pinned buffers and copied on the session's stream; the executor acks it
// and runs the next commands while the stream is held, the buffers stay out
// of the staging cache until their copies ran, and the data arrives intact.
TEST(CudaGetTest, UploadsAreQueuedOnTheSessionStreamWithoutWaiting) {
  auto devices = DeviceRegistry::Create();
  Device* cuda = devices->Find("cuda:0");
  if (cuda == nullptr) {
    std::string why;
    DiscoverCudaDevices(&why);
    GTEST_SKIP() << "no CUDA device: " << why;
  }
  ASSERT_NE(cuda->staging_allocator(), nullptr);
  auto log = std::make_shared<FrameLog>();
  SessionParams params;
  params.id = "cuda-put";
  params.number = 12;
  params.devices = devices.get();
  Session session(std::move(params));
  ASSERT_TRUE(session.Attach(log, 0, v1::ServerFrame()).ok());
  uint64_t seq = 0;
  auto add = [&](v1::Batch* b) {
    v1::Command* c = b->add_commands();
    c->set_seq(++seq);
    return c;
  };
  const size_t n = 1 << 20;  // 4 MiB: four 1 MiB chunks
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 1000);
  auto put = [&](v1::Batch* b, uint64_t handle) {
    const char* bytes = reinterpret_cast<const char*>(values.data());
    const size_t total = n * sizeof(float), chunk = 1 << 20;
    for (size_t offset = 0; offset < total; offset += chunk) {
      v1::Put* p = add(b)->mutable_put();
      p->set_handle(handle);
      if (offset == 0) {
        p->set_dtype(v1::FLOAT32);
        p->add_shape(static_cast<int64_t>(n));
        p->set_device("cuda:0");
      }
      p->set_offset(offset);
      p->mutable_payload()->set_data(bytes + offset, chunk);
      p->set_last(offset + chunk == total);
    }
  };
  auto staged = [&] {
    return cuda->staging_allocator()
        ->GetStats()
        .device.allocated_bytes[kAllPools]
        .current;
  };
  // Warm-up: the same device and pinned allocations as below.
  v1::Batch warm;
  put(&warm, 1);
  v1::Call* twice = add(&warm)->mutable_call();
  twice->set_op_id(OpId("add"));
  twice->add_inputs(1);
  twice->add_inputs(1);
  twice->add_outputs(2);
  v1::Get* first = add(&warm)->mutable_get();
  first->set_handle(2);
  first->set_request_id(99);
  add(&warm)->mutable_release()->add_handles(1);
  add(&warm)->mutable_release()->add_handles(2);
  add(&warm)->mutable_sync()->set_request_id(1);
  session.Submit(warm);
  log->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });

  auto stream = cuda->SessionStream(12);
  ASSERT_TRUE(stream.ok()) << stream.status();
  Gate gate;
  ASSERT_EQ(
      cudaLaunchHostFunc(static_cast<cudaStream_t>(*stream), Gate::Wait, &gate),
      cudaSuccess);
  v1::Batch b;
  put(&b, 3);
  v1::Call* sum = add(&b)->mutable_call();
  sum->set_op_id(OpId("add"));
  sum->add_inputs(3);
  sum->add_inputs(3);
  sum->add_outputs(4);
  v1::Get* get = add(&b)->mutable_get();
  get->set_handle(4);
  get->set_request_id(100);
  session.Submit(b);
  log->WaitFor([&](const v1::ServerFrame& f) {
    return f.has_ack() && f.ack().last_seq() >= seq;
  });
  // Acked with the stream held: no chunk's copy can have run, so every
  // chunk's buffer (and the Get's) is still out of the cache.
  EXPECT_GE(staged(), static_cast<int64_t>(n * sizeof(float)));
  EXPECT_FALSE(log->Any(100));
  gate.Open();
  std::string bytes;
  while (true) {
    v1::ServerFrame f = log->WaitFor([&](const v1::ServerFrame& f) {
      return (f.has_data() && f.data().request_id() == 100 &&
              f.data().offset() == bytes.size()) ||
             (f.has_error() && f.error().request_id() == 100);
    });
    ASSERT_FALSE(f.has_error()) << f.error().status().message();
    bytes += f.data().payload().data();
    if (f.data().last()) break;
  }
  ASSERT_EQ(bytes.size(), n * sizeof(float));
  std::vector<float> got(n);
  std::memcpy(got.data(), bytes.data(), bytes.size());
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += got[i] != 2 * values[i];
  EXPECT_EQ(wrong, 0u);
  v1::Batch end;
  add(&end)->mutable_sync()->set_request_id(2);
  session.Submit(end);
  log->WaitFor([](const v1::ServerFrame& f) {
    return f.has_sync_done() && f.sync_done().request_id() == 2;
  });
  ASSERT_EQ(cuda->Synchronize(nullptr), absl::OkStatus());
  // Returned from the completion thread once the copies ran (it polls at
  // least every millisecond).
  for (int i = 0; i < 1000 && staged() != 0; ++i)
    absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(staged(), 0);
  session.Close();
  session.WaitDone();
}

}  // namespace
}  // namespace tensord

#else  // !TENSORD_WITH_CUDA

TEST(CudaGetTest, Skipped) { GTEST_SKIP() << "built without the CUDA toolkit"; }

#endif  // TENSORD_WITH_CUDA
