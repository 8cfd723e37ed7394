// Streams, events and TF32 on a real GPU (tags = ["gpu"]; skips, saying why,
// without one). Ordering facts only, read from CUDA events, never sleeps or
// durations: a short op on stream 2 completes while a long run queued
// before it on stream 1 is still going (the streams overlap); with stream 2
// waiting on an event recorded after the long run, it completes after it.
// TF32: a 1024^2 float32 matmul agrees with float64 within TF32 tolerance
// when allowed and within float32 tolerance when not.
#include <cmath>

#include "gtest/gtest.h"
#include "kernels/cpu/random.h"
#include "runtime/cuda_discovery.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "runtime/testing/cuda_devices_test.h"

#if TENSORD_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tensord {
namespace {

constexpr uint64_t kSession = 7;

const OpDef& Row(const std::string& name) {
  for (const OpDef& op : OpTable()) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no row " << name;
  return OpTable().front();
}

class CudaStreamTest : public testing::CudaDevicesTest {
 public:
  CudaStreamTest() : CudaDevicesTest(kSession) {}
  void TearDown() override {
    if (cuda_ != nullptr) cuda_->ReleaseSessionStreams(kSession);
  }

  // A standard-normal tensor made on the CPU, moved to the GPU.
  Tensor Randn(const Shape& shape, DType dtype, uint64_t seed) {
    OpContext cpu_ctx = ctx_;
    Tensor f = *Tensor::Empty(devices_->cpu(), DType::kFloat32, shape, {});
    EXPECT_TRUE(
        cpu::FillRandom(cpu::Distribution::kNormal, seed, 0, f.view()).ok());
    auto t = ToDevice(f, cuda_, dtype, cpu_ctx);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  Tensor Run(const std::string& op, std::vector<Tensor> in, uint32_t stream,
             bool allow_tf32 = false) {
    OpContext ctx = ctx_;
    ctx.stream_id = stream;
    ctx.allow_tf32 = allow_tf32;
    auto attrs = Attrs::Build(op, Row(op).attrs, {});
    EXPECT_TRUE(attrs.ok()) << attrs.status();
    auto out = RunOp(Row(op), in, *attrs, ctx);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : Tensor();
  }
  StreamHandle Stream(uint32_t id) {
    auto s = cuda_->SessionStream(kSession, id);
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  }
};

double MaxAbsDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST_F(CudaStreamTest, Tf32MatmulStaysWithinItsTolerance) {
  const Shape shape{1024, 1024};
  Tensor a = Randn(shape, DType::kFloat32, 1);
  Tensor b = Randn(shape, DType::kFloat32, 2);
  Tensor a64 = *CastTo(a, DType::kFloat64, ctx_);
  Tensor b64 = *CastTo(b, DType::kFloat64, ctx_);
  const std::vector<double> ref = Values(Run("matmul", {a64, b64}, 0));
  // Entries are sums of 1024 products of N(0,1) values (std 32). float32
  // rounding keeps errors near 1e-4; TF32 (10 mantissa bits per input)
  // near 3e-2, a few times that at the worst of 1M entries.
  const double fp32 = MaxAbsDiff(Values(Run("matmul", {a, b}, 0, false)), ref);
  const double tf32 = MaxAbsDiff(Values(Run("matmul", {a, b}, 0, true)), ref);
  EXPECT_LT(fp32, 5e-3);
  EXPECT_LT(tf32, 0.5);
  EXPECT_TRUE(cuda_->Synchronize(nullptr).ok());
}

#if TENSORD_WITH_CUDA
// An event of the test's own (the session's events are the device's).
class TestEvent {
 public:
  TestEvent() {
    EXPECT_EQ(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming),
              cudaSuccess);
  }
  ~TestEvent() { cudaEventDestroy(e_); }
  void Record(StreamHandle s) {
    EXPECT_EQ(cudaEventRecord(e_, static_cast<cudaStream_t>(s)), cudaSuccess);
  }
  void Wait() { EXPECT_EQ(cudaEventSynchronize(e_), cudaSuccess); }
  bool Done() { return cudaEventQuery(e_) == cudaSuccess; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Queues a long run of matmuls on stream 1, then (after making stream 2
// wait on a session event recorded behind the run, when `wait`) a short add
// on stream 2. Returns whether the long run had completed when the short op
// did (read from CUDA events once the short op is done).
bool LongRunDoneWhenShortOpIs(CudaStreamTest* t, bool wait) {
  Tensor big = t->Randn({4096, 4096}, DType::kFloat32, 3);
  Tensor small = t->Randn({16}, DType::kFloat32, 4);
  // Stream 2's pool gets its block now: a new device segment (cudaMalloc)
  // between the two streams' work would keep them from overlapping (CUDA's
  // implicit synchronisation), which is what the caching allocator is for.
  t->Run("add", {small, small}, 2);
  EXPECT_TRUE(t->cuda_->Synchronize(nullptr).ok());
  TestEvent long_done, short_done;
  Tensor y = big;
  for (int i = 0; i < 30; ++i) y = t->Run("matmul", {big, big}, 1);
  long_done.Record(t->Stream(1));
  if (wait) {
    EXPECT_TRUE(t->cuda_->RecordSessionEvent(kSession, 1, t->Stream(1)).ok());
    EXPECT_TRUE(t->cuda_->WaitSessionEvent(kSession, 1, t->Stream(2)).ok());
  }
  Tensor twice = t->Run("add", {small, small}, 2);
  short_done.Record(t->Stream(2));
  short_done.Wait();
  const bool long_was_done = long_done.Done();
  const std::vector<double> in = t->Values(small), out = t->Values(twice);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 2 * in[i]);
  EXPECT_TRUE(t->cuda_->Synchronize(nullptr).ok());
  return long_was_done;
}

TEST_F(CudaStreamTest, TwoStreamsOfOneSessionOverlap) {
  EXPECT_FALSE(LongRunDoneWhenShortOpIs(this, /*wait=*/false))
      << "the short op on stream 2 waited for the long run on stream 1";
}

TEST_F(CudaStreamTest, WaitingOnASessionEventOrdersTheStreams) {
  EXPECT_TRUE(LongRunDoneWhenShortOpIs(this, /*wait=*/true))
      << "stream 2 did not wait for the event";
  EXPECT_FALSE(cuda_->WaitSessionEvent(kSession, 99, Stream(2)).ok());
}
#endif  // TENSORD_WITH_CUDA

}  // namespace
}  // namespace tensord
