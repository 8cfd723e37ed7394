// Every compute row without a CUDA kernel is in KnownCpuOnly (and no row
// with one is): the list of rows still missing a CUDA kernel cannot grow
// unseen. Runs in every CUDA build, with or without a GPU.
#include "runtime/ops/known_cpu_only.h"

#include "gtest/gtest.h"
#include "runtime/ops/cuda_kernels.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

TEST(CudaOpTable, RowsWithoutCudaKernels) {
  if (!CudaKernelsBuilt()) GTEST_SKIP() << "built without the CUDA toolkit";
  for (const OpDef& op : OpTable()) {
    if (op.infer == nullptr) continue;  // views and composites
    if (op.cuda == nullptr) {
      EXPECT_TRUE(KnownCpuOnly().count(op.name))
          << op.name << " has no CUDA kernel";
    } else {
      EXPECT_FALSE(KnownCpuOnly().count(op.name))
          << op.name << " has a CUDA kernel now: drop it from KnownCpuOnly";
    }
  }
}

}  // namespace
}  // namespace tensord
