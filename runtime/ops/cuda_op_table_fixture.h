// The fixture of the op-table tests on CUDA (cuda_op_table_test,
// cuda_half_op_table_test): a CPU and a CUDA device (the tests skip, saying
// why, without a GPU), Run for one row on either, and the inputs and
// tolerant comparison the tests share.
#ifndef TENSORD_RUNTIME_OPS_CUDA_OP_TABLE_FIXTURE_H_
#define TENSORD_RUNTIME_OPS_CUDA_OP_TABLE_FIXTURE_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/random.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "runtime/testing/cuda_devices_test.h"

namespace tensord {
namespace testing {

class CudaOpTableTest : public testing::CudaDevicesTest {
 protected:
  CudaOpTableTest() : CudaDevicesTest(/*session=*/1) {}
  void SetUp() override {
    CudaDevicesTest::SetUp();
    if (IsSkipped()) return;
    ctx_.device = devices_->cpu();  // Run picks each call's device
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      const OpDef& op, const std::vector<Tensor>& in,
      const std::map<std::string, AttrValue>& attrs, Device* device,
      uint64_t seed) {
    auto built = Attrs::Build(op.name, op.attrs, attrs);
    if (!built.ok()) return built.status();
    generator_.ManualSeed(seed);
    OpContext ctx = ctx_;
    ctx.device = device;  // creation rows make their outputs here
    ctx.generator = &generator_;
    return RunOp(op, in, *built, ctx);
  }

  // The same values as `u` (on the GPU, 2-d or more) through a transposed
  // copy: a non-contiguous view.
  Tensor Transposed(const Tensor& u) {
    Shape ts = u.shape();
    std::swap(ts[0], ts[1]);
    Tensor base = *Tensor::Empty(cuda_, u.dtype(), ts, ctx_.alloc);
    Strides st = base.strides();
    std::swap(st[0], st[1]);
    Tensor view = base.AsStrided(u.shape(), st, 0);
    EXPECT_TRUE(CopyOnDevice(cuda_, u.view(), view.view(), nullptr).ok());
    return view;
  }

  Generator generator_;
};

// A tensor of `shape` and `dtype` on the CPU: seeded normal values for
// floating dtypes, else zeros (true for bool).
inline Tensor MakeInput(Device* cpu, const AllocContext& alloc,
                        const Shape& shape, DType dtype, uint64_t seed) {
  Tensor t = *Tensor::Empty(cpu, dtype, shape, alloc);
  if (IsFloating(dtype)) {
    Tensor f = *Tensor::Empty(cpu, DType::kFloat32, shape, alloc);
    EXPECT_TRUE(
        cpu::FillRandom(cpu::Distribution::kNormal, seed, 0, f.view()).ok());
    EXPECT_TRUE(cpu::Copy(f.view(), t.view()).ok());
  } else {
    EXPECT_TRUE(cpu::Fill(t.view(), dtype == DType::kBool ? 1 : 0).ok());
  }
  return t;
}

// Element-wise within tol relative to the CPU's value; NaN matches NaN and
// an infinity the same infinity (log1p(-1) is -inf on both).
inline void ExpectClose(const std::vector<double>& a,
                        const std::vector<double>& b, double tol,
                        const std::string& what) {
  for (size_t j = 0; j < a.size(); ++j) {
    if (std::isnan(a[j])) {
      EXPECT_TRUE(std::isnan(b[j])) << what << " [" << j << "]";
    } else if (std::isinf(a[j])) {
      EXPECT_EQ(a[j], b[j]) << what << " [" << j << "]";
    } else {
      EXPECT_NEAR(a[j], b[j], tol * (1 + std::fabs(a[j])))
          << what << " [" << j << "]";
    }
  }
}

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_CUDA_OP_TABLE_FIXTURE_H_
