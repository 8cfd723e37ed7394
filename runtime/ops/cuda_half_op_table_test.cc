// The op table's float16/bfloat16 rows on CUDA against the CPU: the half
// GEMMs (Note [Half GEMM]) and the elementwise rows that read and write
// half in the kernel (Note [Native half kernels]), within half tolerances
// and allocating nothing but their outputs. Without a GPU these tests skip
// and say why.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cuda_op_table_fixture.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using testing::CudaOpTableTest;
using testing::ExpectClose;
using testing::MakeInput;

// Note [Half GEMM]: float16/bfloat16 matmul rows (and linear/addmm through
// them) run as cuBLAS half GEMMs with float accumulation; they agree with the
// CPU (which computes in float32 and rounds) within half tolerances, and
// allocate nothing but their output: no float32 copies of the operands.
TEST_F(CudaOpTableTest, HalfMatmulRowsMatchCpu) {
  struct Case {
    std::string op;
    std::vector<Shape> shapes;
    bool transpose_last = false;  // the last input read through a transpose
  };
  const std::vector<Case> cases = {
      {"mm", {{64, 96}, {96, 40}}},
      {"mm", {{64, 96}, {40, 96}}, true},
      {"matmul", {{3, 64, 96}, {96, 40}}},
      {"bmm", {{4, 32, 48}, {4, 48, 24}}},
      {"linear", {{8, 96}, {40, 96}, {40}}},
      {"addmm", {{64, 40}, {64, 96}, {96, 40}}},
  };
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (const Case& c : cases) {
      const std::string what = c.op + " (" + std::string(DTypeName(d)) +
                               (c.transpose_last ? ", transposed)" : ")");
      std::vector<Tensor> cpu_in, cuda_in;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        Tensor t =
            MakeInput(devices_->cpu(), ctx_.alloc, c.shapes[i], d, i + 1);
        auto g = ToDevice(t, cuda_, d, ctx_);
        ASSERT_TRUE(g.ok()) << what << ": " << g.status();
        Tensor u = *g;
        if (c.transpose_last && i + 1 == c.shapes.size()) {
          const Shape& s = c.shapes[i];
          t = t.AsStrided({s[1], s[0]}, {1, s[1]}, 0);
          u = u.AsStrided({s[1], s[0]}, {1, s[1]}, 0);
        }
        cpu_in.push_back(t);
        cuda_in.push_back(u);
      }
      const OpDef* op = FindOp(c.op);
      ASSERT_NE(op, nullptr) << c.op;
      const int64_t allocs_before =
          cuda_->allocator()->GetStats().device.allocation[kAllPools].allocated;
      auto got = Run(*op, cuda_in, {}, cuda_, 0);
      const int64_t allocs = cuda_->allocator()
                                 ->GetStats()
                                 .device.allocation[kAllPools]
                                 .allocated -
                             allocs_before;
      auto want = Run(*op, cpu_in, {}, devices_->cpu(), 0);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      ASSERT_TRUE(want.ok()) << what << ": " << want.status();
      if (c.op == "mm" || c.op == "bmm") {
        EXPECT_EQ(allocs, 1) << what << ": only the output is allocated";
      }
      const Tensor& out = (*got)[0];
      EXPECT_EQ(out.dtype(), d) << what;
      EXPECT_EQ(out.shape(), (*want)[0].shape()) << what;
      const auto a = Values((*want)[0]), b = Values(out);
      ASSERT_EQ(a.size(), b.size()) << what;
      const double tol = d == DType::kFloat16 ? 5e-3 : 3e-2;
      ExpectClose(a, b, tol, what);
    }
  }
}

// Note [Native half kernels]: the elementwise rows marked native_half_cuda
// read and write float16/bfloat16 in the kernel and compute in float; they
// agree with the CPU (float32 compute, rounded) within one half ulp or so,
// contiguous and strided, and allocate nothing but their outputs.
TEST_F(CudaOpTableTest, HalfElementwiseRowsMatchCpu) {
  int rows = 0;
  for (const OpDef& op : OpTable()) {
    if (!op.native_half_cuda || op.cuda == nullptr) continue;
    if (op.name == "empty" || op.name == "matmul" || op.name == "mm" ||
        op.name == "bmm") {
      continue;  // no values; the GEMMs: HalfMatmulRowsMatchCpu
    }
    ++rows;
    std::vector<OpExample> examples = op.examples;
    if (examples.empty()) {
      OpExample e;
      e.shapes.assign(std::max(op.min_inputs, 0), Shape{16, 33});
      examples.push_back(e);
    }
    for (const OpExample& ex : examples) {
      for (DType half : {DType::kFloat16, DType::kBFloat16}) {
        for (bool strided : {false, true}) {
          std::vector<Tensor> cpu_in, cuda_in;
          for (size_t i = 0; i < ex.shapes.size(); ++i) {
            DType d = i < ex.dtypes.size() ? ex.dtypes[i] : DType::kFloat32;
            if (d == DType::kFloat32) d = half;
            Tensor t =
                MakeInput(devices_->cpu(), ctx_.alloc, ex.shapes[i], d, i + 1);
            Tensor u = *ToDevice(t, cuda_, d, ctx_);
            if (strided && u.ndim() >= 2) u = Transposed(u);
            cpu_in.push_back(t);
            cuda_in.push_back(u);
          }
          const std::string what = op.name + " (" +
                                   std::string(DTypeName(half)) +
                                   (strided ? ", strided)" : ")");
          const int64_t before = cuda_->allocator()
                                     ->GetStats()
                                     .device.allocation[kAllPools]
                                     .allocated;
          auto got = Run(op, cuda_in, ex.attrs, cuda_, 7);
          const int64_t allocs = cuda_->allocator()
                                     ->GetStats()
                                     .device.allocation[kAllPools]
                                     .allocated -
                                 before;
          auto want = Run(op, cpu_in, ex.attrs, devices_->cpu(), 7);
          ASSERT_EQ(want.ok(), got.ok()) << what << ": cpu " << want.status()
                                         << " vs cuda " << got.status();
          if (!want.ok()) continue;
          if (ex.dtypes.empty()) {  // every operand already in `half`
            EXPECT_EQ(allocs, static_cast<int64_t>(got->size()))
                << what << ": only the outputs are allocated";
          }
          for (size_t k = 0; k < want->size(); ++k) {
            EXPECT_EQ((*got)[k].dtype(), (*want)[k].dtype()) << what;
            const auto a = Values((*want)[k]), b = Values((*got)[k]);
            ASSERT_EQ(a.size(), b.size()) << what;
            const double tol = half == DType::kFloat16 ? 2e-3 : 1.6e-2;
            ExpectClose(a, b, tol, what + " output " + std::to_string(k));
          }
        }
      }
    }
  }
  EXPECT_GT(rows, 40);  // the unary, binary, compare and creation rows
}

}  // namespace
}  // namespace tensord
