// The fixture of the op-table tests that run rows on the CPU: a device
// registry, the CPU op context (session 1, a generator), tensors from host
// vectors, and an op run by name with its attributes. Test-only.
#ifndef TENSORD_RUNTIME_OPS_CPU_OP_TEST_H_
#define TENSORD_RUNTIME_OPS_CPU_OP_TEST_H_

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {

class CpuOpTest : public ::testing::Test {
 protected:
  using AttrMap = std::map<std::string, AttrValue>;

  void SetUp() override {
    devices_ = DeviceRegistry::Create();
    ctx_.device = devices_->cpu();
    ctx_.devices = devices_.get();
    ctx_.generator = &generator_;
    ctx_.alloc.session = 1;
  }
  Tensor Empty(DType dtype, const Shape& shape) {
    auto t = Tensor::Empty(devices_->cpu(), dtype, shape, ctx_.alloc);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }
  // A `dtype` tensor of `shape` holding `v` (T: the dtype's C++ type).
  template <typename T>
  Tensor From(const std::vector<T>& v, DType dtype, const Shape& shape) {
    Tensor t = Empty(dtype, shape);
    EXPECT_EQ(t.nbytes(), v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(t.data(), v.data(), t.nbytes());  // no null src
    return t;
  }
  absl::StatusOr<std::vector<Tensor>> Run(const std::string& name,
                                          std::vector<Tensor> in,
                                          AttrMap attrs = {}) {
    const OpDef* op = FindOp(name);
    EXPECT_NE(op, nullptr) << name;
    if (op == nullptr) return absl::NotFoundError(name);
    auto built = Attrs::Build(name, op->attrs, std::move(attrs));
    if (!built.ok()) return built.status();
    return RunOp(*op, in, *built, ctx_);
  }

  std::unique_ptr<DeviceRegistry> devices_;
  Generator generator_;
  OpContext ctx_;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_CPU_OP_TEST_H_
