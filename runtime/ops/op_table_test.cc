// Walks the op table: every row is well formed and every compute row runs on
// the CPU. Values across the op set are checked against PyTorch in
// tests/python; hand-computed cases for the foundation ops are here.
#include "runtime/ops/op_table.h"

#include <cmath>
#include <cstring>
#include <set>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/random.h"
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
  absl::StatusOr<std::vector<Tensor>> Run(
      const std::string& name, std::vector<Tensor> in,
      std::map<std::string, AttrValue> attrs = {}) {
    const OpDef* op = FindOp(name);
    EXPECT_NE(op, nullptr) << name;
    auto built = Attrs::Build(name, op->attrs, std::move(attrs));
    if (!built.ok()) return built.status();
    return RunOp(*op, in, *built, ctx_);
  }
  // The values of `t` (2-d or more) through a transposed copy: the same
  // tensor, non-contiguous.
  Tensor StridedCopy(const Tensor& t) {
    Shape ts = t.shape();
    std::swap(ts[0], ts[1]);
    Tensor base = *Tensor::Empty(devices_->cpu(), t.dtype(), ts, ctx_.alloc);
    Strides st = base.strides();
    std::swap(st[0], st[1]);
    Tensor view = base.AsStrided(t.shape(), st, 0);
    EXPECT_TRUE(cpu::Copy(t.view(), view.view()).ok());
    return view;
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
    EXPECT_EQ((op.view != nullptr) + (op.infer != nullptr) +
                  (op.composite != nullptr),
              1)
        << op.name << ": exactly one of view/infer/composite";
    if (op.infer) EXPECT_NE(op.cpu, nullptr) << op.name << " has no cpu kernel";
    EXPECT_GE(op.min_inputs, 0);
    EXPECT_TRUE(op.max_inputs < 0 || op.max_inputs >= op.min_inputs);
  }
}

// Inputs for an example: random normal floats, zeros for integer inputs
// (valid indices and targets), alternating bools.
Tensor MakeInput(Device* cpu, const AllocContext& alloc, const Shape& shape,
                 DType dtype, uint64_t seed, bool positive = false) {
  Tensor t = *Tensor::Empty(cpu, dtype, shape, alloc);
  if (IsFloating(dtype)) {
    Tensor f = *Tensor::Empty(cpu, DType::kFloat32, shape, alloc);
    EXPECT_TRUE(
        cpu::FillRandom(cpu::Distribution::kNormal, seed, 0, f.view()).ok());
    float* v = f.view().ptr<float>();
    for (int64_t i = 0; positive && i < f.numel(); ++i) v[i] = std::abs(v[i]);
    EXPECT_TRUE(cpu::Copy(f.view(), t.view()).ok());
  } else {
    EXPECT_TRUE(cpu::Fill(t.view(), dtype == DType::kBool ? 1 : 0).ok());
  }
  return t;
}

// Note [Every row is exercised]: each row runs on its examples (or, for
// rows of float inputs and no required attributes, on [2, 3] inputs), in
// float32 and in bfloat16 for float rows, non-contiguous too; outputs must
// match num_outputs. A row that cannot be called this way must say so with
// an example, so no op lands untested.
TEST_F(OpTableTest, EveryRowRunsOnItsExamples) {
  for (const OpDef& op : OpTable()) {
    std::vector<OpExample> examples = op.examples;
    if (examples.empty()) {
      bool required = false;
      for (const AttrSpec& a : op.attrs) required |= a.required;
      ASSERT_FALSE(required)
          << op.name << " has required attributes but no example";
      OpExample e;
      e.shapes.assign(std::max(op.min_inputs, 0), Shape{2, 3});
      examples.push_back(e);
    }
    for (const OpExample& ex : examples) {
      for (DType float_type :
           {DType::kFloat32, DType::kBFloat16, DType::kFloat64}) {
        for (bool strided : {false, true}) {
          // view() of a transposed tensor is an error by design (PyTorch's).
          if (strided && op.name == "view") continue;
          std::vector<Tensor> in;
          for (size_t i = 0; i < ex.shapes.size(); ++i) {
            DType d = i < ex.dtypes.size() ? ex.dtypes[i] : DType::kFloat32;
            if (d == DType::kFloat32) d = float_type;
            Tensor t = MakeInput(devices_->cpu(), ctx_.alloc, ex.shapes[i], d,
                                 i, ex.positive);
            if (strided && t.ndim() >= 2 && IsFloating(d)) t = StridedCopy(t);
            in.push_back(t);
          }
          auto out = Run(op.name, in, ex.attrs);
          ASSERT_TRUE(out.ok())
              << op.name << " (" << DTypeName(float_type)
              << (strided ? ", strided" : "") << "): " << out.status();
          if (op.num_outputs >= 0) {
            EXPECT_EQ(static_cast<int>(out->size()), op.num_outputs) << op.name;
          }
          for (const Tensor& t : *out) EXPECT_TRUE(t.defined()) << op.name;
        }
      }
    }
  }
}

TEST_F(OpTableTest, InPlaceOpsWriteThroughAndBumpVersions) {
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = FromVector({10, 20, 30}, {3});
  const uint64_t v0 = a.storage()->version();
  auto r = Run("add_", {a, b}, {{"alpha", 2.0}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].storage(), a.storage());
  EXPECT_GT(a.storage()->version(), v0);
  EXPECT_EQ(Values(a), (std::vector<float>{21, 42, 63, 24, 45, 66}));
  auto bad = Run("add_", {b, a});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument)
      << bad.status();
  auto view = Run("select", {a}, {{"dim", int64_t{0}}, {"index", int64_t{1}}});
  ASSERT_TRUE(view.ok());
  ASSERT_TRUE(Run("zero_", {(*view)[0]}).ok());
  EXPECT_EQ(Values(a), (std::vector<float>{21, 42, 63, 0, 0, 0}));
}

TEST_F(OpTableTest, ViewsShareStorage) {
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  for (auto [name, attrs] :
       std::vector<std::pair<std::string, std::map<std::string, AttrValue>>>{
           {"view", {{"shape", std::vector<int64_t>{3, 2}}}},
           {"permute", {{"dims", std::vector<int64_t>{1, 0}}}},
           {"slice", {{"dim", int64_t{1}}, {"step", int64_t{2}}}},
           {"expand", {{"size", std::vector<int64_t>{4, 2, 3}}}},
           {"unsqueeze", {{"dim", int64_t{0}}}}}) {
    auto r = Run(name, {a}, attrs);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_EQ((*r)[0].storage(), a.storage()) << name;
  }
  auto s =
      Run("slice", {a},
          {{"dim", int64_t{1}}, {"start", int64_t{0}}, {"step", int64_t{2}}});
  EXPECT_EQ(Values((*s)[0]), (std::vector<float>{1, 3, 4, 6}));
  auto t = Run("t", {a});
  auto v = Run("view", {(*t)[0]}, {{"shape", std::vector<int64_t>{6}}});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  auto parts = Run("split", {a},
                   {{"split_size_or_sections", std::vector<int64_t>{2}},
                    {"dim", int64_t{1}}});
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->size(), 2u);
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
  auto m =
      Run("mean", {a}, {{"dim", std::vector<int64_t>{1}}, {"keepdim", true}});
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
  EXPECT_NE(
      bad.status().message().find("[2, 3] and [2, 3] cannot be multiplied"),
      std::string::npos)
      << bad.status();
}

TEST_F(OpTableTest, InvalidCallsFailBeforeAnyKernel) {
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(Run("add", {a}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("add", {a, FromVector({1, 2}, {2})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("sum", {a}, {{"dim", std::vector<int64_t>{2}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("zeros", {}, {{"shape", std::vector<int64_t>{2, -3}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("reshape", {a}, {{"shape", std::vector<int64_t>{4, -1}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Run("zeros", {}, {{"shape", std::vector<int64_t>{2}}, {"bogus", true}})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Run("zeros", {},
                {{"shape", std::vector<int64_t>{2}},
                 {"device", std::string("cuda:7")}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(OpTableTest, MoreInvalidCallsAreInvalidArgument) {
  Tensor a = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx = *Tensor::Empty(devices_->cpu(), DType::kInt64, {2}, ctx_.alloc);
  idx.view().ptr<int64_t>()[0] = 0;
  idx.view().ptr<int64_t>()[1] =
      7;  // out of range: found by the kernel's check
  auto expect_invalid = [](const absl::StatusOr<std::vector<Tensor>>& r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << r.status();
  };
  expect_invalid(Run("index_select", {a, idx}, {{"dim", int64_t{1}}}));
  expect_invalid(Run("index_select", {a, a}, {{"dim", int64_t{1}}}));
  expect_invalid(Run("softmax", {a}, {{"dim", int64_t{2}}}));
  expect_invalid(Run("mm", {a, a}));
  expect_invalid(Run("permute", {a}, {{"dims", std::vector<int64_t>{0, 0}}}));
  expect_invalid(Run("expand", {a}, {{"size", std::vector<int64_t>{3, 3}}}));
  expect_invalid(Run(
      "narrow", {a},
      {{"dim", int64_t{1}}, {"start", int64_t{2}}, {"length", int64_t{2}}}));
  expect_invalid(
      Run("full", {},
          {{"shape", std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40}},
           {"fill_value", 1.0}}));
  expect_invalid(Run("conv2d", {a, a}));
  expect_invalid(Run("cross_entropy", {a, a}, {{"label_smoothing", 2.0}}));
  expect_invalid(Run("where", {a, a, a}));
  expect_invalid(Run("eye", {}, {{"n", int64_t{-1}}}));
  expect_invalid(Run("linspace", {},
                     {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{-2}}}));
  expect_invalid(Run("cat", {a, FromVector({1, 2}, {1, 2})}));
  expect_invalid(
      Run("max_pool2d", {a}, {{"kernel_size", std::vector<int64_t>{2}}}));
}

// A fused backward's saved statistics are checked against its input: the
// error names the op, the input's position and both dtype and shape.
TEST_F(OpTableTest, FusedBackwardNamesAMisshapenSavedInput) {
  Tensor x = FromVector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor stats = FromVector({0, 0}, {2, 1});
  Tensor wrong = FromVector({0, 0, 0}, {3, 1});
  auto r = Run("native_layer_norm_backward", {x, x, stats, wrong},
               {{"normalized_shape", std::vector<int64_t>{3}}});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "native_layer_norm_backward: input 3 should be float32 [2, 1], "
            "got float32 [3, 1]");
  ASSERT_TRUE(Run("native_layer_norm_backward", {x, x, stats, stats},
                  {{"normalized_shape", std::vector<int64_t>{3}}})
                  .ok());
}

// max_pool2d_backward given max_pool2d's output (as autograd calls it) takes
// the window maxima from it: the same gradient as recomputing them, for
// overlapping, padded, dilated and ceil-mode windows, 3-d and 4-d, float32
// and bfloat16, a non-contiguous output too. A misshapen output is rejected.
TEST_F(OpTableTest, MaxPoolBackwardWithOutputMatchesWithout) {
  const std::map<std::string, AttrValue> attrs = {
      {"kernel_size", std::vector<int64_t>{3, 2}},
      {"stride", std::vector<int64_t>{2, 1}},
      {"padding", std::vector<int64_t>{1, 1}},
      {"dilation", std::vector<int64_t>{1, 2}},
      {"ceil_mode", true}};
  for (DType d : {DType::kFloat32, DType::kBFloat16}) {
    for (const Shape& shape : {Shape{2, 3, 7, 6}, Shape{3, 8, 5}}) {
      SCOPED_TRACE(testing::Message()
                   << DTypeName(d) << " " << ShapeToString(shape));
      Tensor x = MakeInput(devices_->cpu(), ctx_.alloc, shape, d, 3);
      auto y = Run("max_pool2d", {x}, attrs);
      ASSERT_TRUE(y.ok()) << y.status();
      const Tensor& out = (*y)[0];
      Tensor g = MakeInput(devices_->cpu(), ctx_.alloc, out.shape(), d, 4);
      const Tensor strided = StridedCopy(out);
      auto want = Run("max_pool2d_backward", {g, x}, attrs);
      ASSERT_TRUE(want.ok()) << want.status();
      const Tensor& w = (*want)[0];
      for (const Tensor& given : {out, strided}) {
        auto got = Run("max_pool2d_backward", {g, x, given}, attrs);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ((*got)[0].shape(), w.shape());
        EXPECT_EQ(std::memcmp((*got)[0].data(), w.data(), w.nbytes()), 0);
      }
      auto bad = Run("max_pool2d_backward", {g, x, x}, attrs);
      EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
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
