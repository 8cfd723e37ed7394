// Walks the op table: every row is well formed and every compute row runs on
// the CPU. Values across the op set are checked against PyTorch in
// tests/python; hand-computed cases for the foundation ops are here.
#include "runtime/ops/op_table.h"

#include <cstring>
#include <set>

#include "gtest/gtest.h"
#include "runtime/ops/dispatch.h"

namespace tensord {
namespace {

class OpTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = DeviceRegistry::Create();
    ctx_.device = devices_->cpu();
    ctx_.devices = devices_.get();
    ctx_.generator = &generator_;
    ctx_.alloc.session = 1;
  }
  Tensor FromVector(std::vector<float> v, Shape shape) {
    auto t = Tensor::Empty(devices_->cpu(), DType::kFloat32, shape, ctx_.alloc);
    EXPECT_TRUE(t.ok());
    std::memcpy(t->data(), v.data(), v.size() * sizeof(float));
    return *t;
  }
  absl::StatusOr<std::vector<Tensor>> Run(const std::string& name,
                                          std::vector<Tensor> in,
                                          std::map<std::string, AttrValue> attrs = {}) {
    const OpDef* op = FindOp(name);
    EXPECT_NE(op, nullptr) << name;
    auto built = Attrs::Build(name, op->attrs, std::move(attrs));
    if (!built.ok()) return built.status();
    return RunOp(*op, in, *built, ctx_);
  }
  static std::vector<float> Values(const Tensor& t) {
    std::vector<float> out;
    const StridedView v = t.view();
    // Walk in row-major order through the strides (up to 3-d here).
    int64_t s0 = v.ndim > 0 ? v.sizes[0] : 1, s1 = v.ndim > 1 ? v.sizes[1] : 1;
    for (int64_t i = 0; i < s0; ++i)
      for (int64_t j = 0; j < s1; ++j)
        out.push_back(v.ptr<float>()[i * (v.ndim > 0 ? v.strides[0] : 0) +
                                     j * (v.ndim > 1 ? v.strides[1] : 0)]);
    return out;
  }

  std::unique_ptr<DeviceRegistry> devices_;
  Generator generator_;
  OpContext ctx_;
};

TEST_F(OpTableTest, RowsAreWellFormed) {
  std::set<std::string> names;
  for (const OpDef& op : OpTable()) {
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate op " << op.name;
    EXPECT_FALSE(op.doc.empty()) << op.name;
    EXPECT_TRUE((op.view != nullptr) != (op.infer != nullptr))
        << op.name << ": exactly one of view/infer";
    if (op.infer) EXPECT_NE(op.cpu, nullptr) << op.name << " has no cpu kernel";
    EXPECT_GE(op.min_inputs, 0);
    EXPECT_TRUE(op.max_inputs < 0 || op.max_inputs >= op.min_inputs);
  }
}

TEST_F(OpTableTest, BroadcastAddMulMatmulSumHandComputed) {
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = FromVector({10, 20, 30}, {3});
  auto sum = Run("add", {a, b}, {{"alpha", 2.0}});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(Values((*sum)[0]), (std::vector<float>{21, 42, 63, 24, 45, 66}));
  auto at = Run("transpose", {a}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}});
  ASSERT_TRUE(at.ok());
  auto mm = Run("matmul", {a, (*at)[0]});
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_EQ((*mm)[0].shape(), Shape({2, 2}));
  EXPECT_EQ(Values((*mm)[0]), (std::vector<float>{14, 32, 32, 77}));
  auto s = Run("sum", {a}, {{"dim", std::vector<int64_t>{0}}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Values((*s)[0]), (std::vector<float>{5, 7, 9}));
  auto m = Run("mean", {a}, {{"dim", std::vector<int64_t>{1}}, {"keepdim", true}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)[0].shape(), Shape({2, 1}));
  EXPECT_EQ(Values((*m)[0]), (std::vector<float>{2, 5}));
}

TEST_F(OpTableTest, MatmulVectorAndBatchedRules) {
  Tensor v = FromVector({1, 2, 3}, {3});
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  auto mv = Run("matmul", {a, v});
  ASSERT_TRUE(mv.ok());
  EXPECT_EQ((*mv)[0].shape(), Shape({2}));
  EXPECT_EQ(Values((*mv)[0]), (std::vector<float>{14, 32}));
  auto dot = Run("matmul", {v, v});
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ((*dot)[0].shape(), Shape({}));
  EXPECT_EQ(*(*dot)[0].view().ptr<float>(), 14.0f);
  auto bad = Run("matmul", {a, a});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2, 3] and [2, 3] cannot be multiplied"),
            std::string::npos)
      << bad.status();
}

TEST_F(OpTableTest, InvalidCallsFailBeforeAnyKernel) {
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(Run("add", {a}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("add", {a, FromVector({1, 2}, {2})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("sum", {a}, {{"dim", std::vector<int64_t>{2}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("zeros", {}, {{"shape", std::vector<int64_t>{2, -3}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("reshape", {a}, {{"shape", std::vector<int64_t>{4, -1}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("zeros", {}, {{"shape", std::vector<int64_t>{2}}, {"bogus", true}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("zeros", {}, {{"shape", std::vector<int64_t>{2}},
                              {"device", std::string("cuda:7")}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(OpTableTest, RandnIsReproducibleBySeed) {
  generator_.ManualSeed(5);
  auto x = Run("randn", {}, {{"shape", std::vector<int64_t>{8}}});
  generator_.ManualSeed(5);
  auto y = Run("randn", {}, {{"shape", std::vector<int64_t>{8}}});
  auto z = Run("randn", {}, {{"shape", std::vector<int64_t>{8}}});
  ASSERT_TRUE(x.ok() && y.ok() && z.ok());
  EXPECT_EQ(Values((*x)[0]), Values((*y)[0]));
  EXPECT_NE(Values((*y)[0]), Values((*z)[0]));
}

}  // namespace
}  // namespace tensord
