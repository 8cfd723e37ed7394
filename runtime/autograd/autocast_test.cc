// The autocast policy table and the casts it makes, with gradients flowing
// back to the inputs' own dtypes (the daemon-wide behaviour is checked
// against PyTorch in tests/python/test_autocast.py).
#include "runtime/autograd/autocast.h"

#include "gtest/gtest.h"
#include "runtime/autograd/engine.h"
#include "runtime/autograd/recorder.h"
#include "runtime/device.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

size_t IdOf(const std::string& name) {
  const OpDef* op = FindOp(name);
  EXPECT_NE(op, nullptr) << name;
  return static_cast<size_t>(op - OpTable().data());
}

TEST(AutocastPolicyTest, FollowsPyTorchsCudaLists) {
  EXPECT_EQ(AutocastPolicyOf(IdOf("matmul")), AutocastPolicy::kLow);
  EXPECT_EQ(AutocastPolicyOf(IdOf("conv2d")), AutocastPolicy::kLow);
  EXPECT_EQ(AutocastPolicyOf(IdOf("linear")), AutocastPolicy::kLow);
  EXPECT_EQ(AutocastPolicyOf(IdOf("layer_norm")), AutocastPolicy::kFloat32);
  EXPECT_EQ(AutocastPolicyOf(IdOf("nll_loss")), AutocastPolicy::kFloat32);
  EXPECT_EQ(AutocastPolicyOf(IdOf("sum")), AutocastPolicy::kFloat32);
  EXPECT_EQ(AutocastPolicyOf(IdOf("relu")), AutocastPolicy::kAsCalled);
  EXPECT_EQ(AutocastPolicyOf(OpTable().size()), AutocastPolicy::kAsCalled);
}

class AutocastTest : public ::testing::Test {
 protected:
  AutocastTest() {
    devices_ = DeviceRegistry::Create();
    ctx_.device = devices_->cpu();
    ctx_.devices = devices_.get();
    ctx_.generator = &generator_;
    ctx_.alloc.session = 3;
    ctx_.recorder = &recorder_;
  }
  Tensor Make(DType dtype, bool requires_grad) {
    auto t = CallOp("ones", {}, {{"shape", std::vector<int64_t>{2, 2}},
                                 {"dtype", dtype}},
                    ctx_);
    EXPECT_TRUE(t.ok()) << t.status();
    (*t)[0].EnsureAutograd().requires_grad = requires_grad;
    return (*t)[0];
  }

  std::unique_ptr<DeviceRegistry> devices_;
  Generator generator_;
  GraphRecorder recorder_;
  OpContext ctx_;
};

TEST_F(AutocastTest, LowCastsFloatingInputsButNotDoublesOrIntegers) {
  absl::InlinedVector<Tensor, 4> in = {Make(DType::kFloat32, true),
                                       Make(DType::kFloat64, false),
                                       Make(DType::kInt64, false)};
  ASSERT_TRUE(
      AutocastInputs(AutocastPolicy::kLow, DType::kBFloat16, &in, ctx_).ok());
  EXPECT_EQ(in[0].dtype(), DType::kBFloat16);
  EXPECT_EQ(in[1].dtype(), DType::kFloat64);
  EXPECT_EQ(in[2].dtype(), DType::kInt64);
}

TEST_F(AutocastTest, Float32AndPromote) {
  absl::InlinedVector<Tensor, 4> in = {Make(DType::kFloat16, false),
                                       Make(DType::kFloat32, false)};
  ASSERT_TRUE(
      AutocastInputs(AutocastPolicy::kFloat32, DType::kFloat16, &in, ctx_)
          .ok());
  EXPECT_EQ(in[0].dtype(), DType::kFloat32);
  in = {Make(DType::kBFloat16, false), Make(DType::kFloat32, false)};
  ASSERT_TRUE(
      AutocastInputs(AutocastPolicy::kPromote, DType::kBFloat16, &in, ctx_)
          .ok());
  EXPECT_EQ(in[0].dtype(), DType::kFloat32);
  EXPECT_EQ(in[1].dtype(), DType::kFloat32);
}

TEST_F(AutocastTest, GradientOfACastInputKeepsItsDtype) {
  Tensor w = Make(DType::kFloat32, true);
  absl::InlinedVector<Tensor, 4> in = {w};
  ASSERT_TRUE(
      AutocastInputs(AutocastPolicy::kLow, DType::kBFloat16, &in, ctx_).ok());
  auto loss = CallOp("sum", {in[0]}, {}, ctx_);
  ASSERT_TRUE(loss.ok()) << loss.status();
  ASSERT_TRUE(RunBackward({(*loss)[0]}, {}, {}, BackwardOptions(), ctx_).ok());
  const Tensor& g = w.autograd()->grad;
  EXPECT_EQ(g.dtype(), DType::kFloat32);
  const float* p = static_cast<const float*>(g.data());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p[i], 1.0f);
}

}  // namespace
}  // namespace tensord
