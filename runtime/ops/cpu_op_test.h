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
  // Output `output` of a run expected to succeed (an empty Tensor, and a
  // failure, if it does not).
  Tensor Run1(const std::string& name, std::vector<Tensor> in,
              AttrMap attrs = {}, int output = 0) {
    auto r = Run(name, std::move(in), std::move(attrs));
    EXPECT_TRUE(r.ok()) << name << ": " << r.status();
    return r.ok() ? (*r)[output] : Tensor();
  }
  // `t`'s values as float64, in row-major order (through a contiguous
  // float64 copy).
  std::vector<double> Doubles(const Tensor& t) {
    Tensor d =
        Run1("contiguous", {Run1("to", {t}, {{"dtype", DType::kFloat64}})});
    std::vector<double> v(d.numel());
    if (!v.empty()) std::memcpy(v.data(), d.data(), d.nbytes());
    return v;
  }
  // A contiguous int64 tensor's values.
  static std::vector<int64_t> Ints64(const Tensor& t) {
    std::vector<int64_t> v(t.numel());
    if (!v.empty()) std::memcpy(v.data(), t.data(), t.nbytes());
    return v;
  }

  std::unique_ptr<DeviceRegistry> devices_;
  Generator generator_;
  OpContext ctx_;
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_CPU_OP_TEST_H_
