// Note [Cross-stream inputs] end to end through RunOp: a kernel on another
// stream of the session records its inputs, so their blocks are not reused
// on their own stream until that stream's work (an event) is done. A fake
// device stands in for a GPU: kCuda kind, one fake stream per session stream
// id, a caching allocator over LimitedBackend (events complete when the test
// says so) and a row whose "CUDA" kernel is a host memcpy.
#include <cstring>
#include <memory>

#include "gtest/gtest.h"
#include "runtime/memory/limited_backend.h"
#include "runtime/ops/dispatch.h"
#include "runtime/testing/host_memory_gpu.h"

namespace tensord {
namespace {

constexpr size_t kBytes = 4096;
constexpr uint64_t kSession = 1;

StreamHandle FakeStream(uint32_t stream_id) {
  return reinterpret_cast<StreamHandle>(uintptr_t{stream_id} + 1);
}

class FakeGpu : public testing::HostMemoryGpu {
 public:
  FakeGpu() : FakeGpu(new LimitedBackend(64 << 20)) {}
  absl::StatusOr<StreamHandle> SessionStream(uint64_t,
                                             uint32_t stream_id) override {
    return FakeStream(stream_id);
  }

  LimitedBackend* backend_;

 private:
  // Owned by the allocator; kept to tell the test's events apart.
  explicit FakeGpu(LimitedBackend* backend)
      : HostMemoryGpu("fake:0", std::make_unique<CachingAllocator>(
                                    std::unique_ptr<LimitedBackend>(backend))),
        backend_(backend) {}
};

absl::StatusOr<std::vector<TensorSpec>> SameSpec(absl::Span<const Tensor> in,
                                                 const Attrs&,
                                                 const OpContext&) {
  return std::vector<TensorSpec>{
      {in[0].dtype(), in[0].shape(), in[0].device()}};
}

absl::Status HostCopy(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                      const Attrs&, const OpContext&) {
  std::memcpy(out[0].data(), in[0].data(), in[0].nbytes());
  return absl::OkStatus();
}

class CrossStreamTest : public ::testing::Test {
 protected:
  CrossStreamTest() {
    op_.name = "fake_copy";
    op_.min_inputs = op_.max_inputs = 1;
    op_.infer = SameSpec;
    op_.cuda = HostCopy;
  }
  Tensor Make(uint32_t stream_id) {
    auto t = Tensor::Empty(&gpu_, DType::kFloat32, Shape{kBytes / 4},
                           AllocContext{kSession, FakeStream(stream_id)});
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  // Runs the copy row on stream `stream_id` of the session.
  Tensor CopyOn(const Tensor& x, uint32_t stream_id) {
    OpContext ctx;
    ctx.device = &gpu_;
    ctx.alloc.session = kSession;
    ctx.stream_id = stream_id;
    auto attrs = Attrs::Build(op_.name, op_.attrs, {});
    EXPECT_TRUE(attrs.ok());
    auto out = RunOp(op_, {x}, *attrs, ctx);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : Tensor();
  }

  FakeGpu gpu_;
  OpDef op_;
};

TEST_F(CrossStreamTest, InputReadOnAnotherStreamIsNotReusedUntilItsEvent) {
  Tensor x = Make(0);
  void* p = x.storage()->data();
  Tensor y = CopyOn(x, 1);
  EXPECT_EQ(y.storage()->stream(), FakeStream(1));  // outputs: the op's stream
  x = Tensor();  // freed while stream 1 may still read it
  EXPECT_EQ(gpu_.backend_->LiveEvents(), 1);
  Tensor again = Make(0);
  EXPECT_NE(again.storage()->data(), p);
  again = Tensor();
  gpu_.backend_->CompleteEventsOn(FakeStream(1));
  Tensor reused = Make(0);  // events are polled on allocation
  EXPECT_EQ(reused.storage()->data(), p);
}

TEST_F(CrossStreamTest, SameStreamNeedsNoEvent) {
  Tensor x = Make(2);
  void* p = x.storage()->data();
  Tensor y = CopyOn(x, 2);
  x = Tensor();
  EXPECT_EQ(gpu_.backend_->LiveEvents(), 0);
  EXPECT_EQ(Make(2).storage()->data(), p);  // stream order makes reuse safe
}

TEST_F(CrossStreamTest, LegacyStreamStorageNeedsNoEvent) {
  auto t = Tensor::Empty(&gpu_, DType::kFloat32, Shape{kBytes / 4},
                         AllocContext{kSession, nullptr});  // an upload
  ASSERT_TRUE(t.ok());
  Tensor y = CopyOn(*t, 3);
  *t = Tensor();
  EXPECT_EQ(gpu_.backend_->LiveEvents(), 0);
}

}  // namespace
}  // namespace tensord
