// Rows on the non-float dtypes PyTorch takes for them (its dtype lists, as
// found by the OpInfo sweep of docs/ops.md), hand-computed on the CPU: bool
// sign (itself), fmax/maximum/clamp_min (or), fmin/minimum/clamp_max (and),
// sort/argsort (false before true, stable), clamp with number bounds (int64
// or float32), the promotions of mixed bool/int64 operands, topk's refusal
// of bool (PyTorch's), and int64 avg_pool2d (truncating division). CUDA runs
// the same rows against the CPU in cuda_op_table_test.cc; values against
// PyTorch: tests/python.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using B = std::vector<bool>;
using I = std::vector<int64_t>;

class DTypeSupportTest : public CpuOpTest {
 protected:
  Tensor Bools(const B& v, Shape shape) {
    Tensor t = Empty(DType::kBool, shape);
    for (size_t i = 0; i < v.size(); ++i) t.view().ptr<bool>()[i] = v[i];
    return t;
  }
  Tensor Ints(const I& v, Shape shape) { return From(v, DType::kInt64, shape); }
  // The first output's dtype and values (row-major, as int64).
  std::pair<DType, I> Out(const std::string& name, std::vector<Tensor> in,
                          std::map<std::string, AttrValue> attrs = {},
                          size_t output = 0) {
    auto r = Run(name, std::move(in), std::move(attrs));
    EXPECT_TRUE(r.ok()) << name << ": " << r.status();
    if (!r.ok()) return {DType::kFloat32, {}};
    const Tensor& t = (*r)[output];
    Tensor flat =
        *Tensor::Empty(devices_->cpu(), DType::kInt64, t.shape(), ctx_.alloc);
    EXPECT_TRUE(cpu::Copy(t.view(), flat.view()).ok());
    const int64_t* p = flat.view().ptr<int64_t>();
    return {t.dtype(), I(p, p + flat.numel())};
  }
};

TEST_F(DTypeSupportTest, BoolMapsAreLogicalOps) {
  const Tensor a = Bools({true, true, false, false}, {4});
  const Tensor b = Bools({true, false, true, false}, {4});
  const std::pair<DType, I> kOr = {DType::kBool, {1, 1, 1, 0}};
  const std::pair<DType, I> kAnd = {DType::kBool, {1, 0, 0, 0}};
  EXPECT_EQ(Out("fmax", {a, b}), kOr);
  EXPECT_EQ(Out("maximum", {a, b}), kOr);
  EXPECT_EQ(Out("clamp_min", {a, b}), kOr);
  EXPECT_EQ(Out("fmin", {a, b}), kAnd);
  EXPECT_EQ(Out("minimum", {a, b}), kAnd);
  EXPECT_EQ(Out("clamp_max", {a, b}), kAnd);
  EXPECT_EQ(Out("sign", {a}),
            (std::pair<DType, I>{DType::kBool, {1, 1, 0, 0}}));
  // Broadcast: [2, 1] against [4].
  const Tensor col = Bools({false, true}, {2, 1});
  EXPECT_EQ(Out("fmin", {col, b}),
            (std::pair<DType, I>{DType::kBool, {0, 0, 0, 0, 1, 0, 1, 0}}));
  EXPECT_EQ(Out("clamp_min", {col, b}),
            (std::pair<DType, I>{DType::kBool, {1, 0, 1, 0, 1, 1, 1, 1}}));
}

TEST_F(DTypeSupportTest, BoolWithInt64PromotesToInt64) {
  const Tensor b = Bools({true, false, true, false}, {4});
  const Tensor i = Ints({3, -2, 0, 5}, {4});
  EXPECT_EQ(Out("fmax", {b, i}),
            (std::pair<DType, I>{DType::kInt64, {3, 0, 1, 5}}));
  EXPECT_EQ(Out("fmin", {i, b}),
            (std::pair<DType, I>{DType::kInt64, {1, -2, 0, 0}}));
  EXPECT_EQ(Out("clamp_min", {i, b}),
            (std::pair<DType, I>{DType::kInt64, {3, 0, 1, 5}}));
  EXPECT_EQ(Out("clamp_max", {b, i}),
            (std::pair<DType, I>{DType::kInt64, {1, -2, 0, 0}}));
}

TEST_F(DTypeSupportTest, BoolSortPutsFalseFirstStably) {
  // [[1, 0, 1, 1, 0], [0, 0, 1, 0, 1]]
  const Tensor x =
      Bools({true, false, true, true, false, false, false, true, false, true},
            {2, 5});
  EXPECT_EQ(
      Out("sort", {x}),
      (std::pair<DType, I>{DType::kBool, {0, 0, 1, 1, 1, 0, 0, 0, 1, 1}}));
  EXPECT_EQ(
      Out("sort", {x}, {}, 1),
      (std::pair<DType, I>{DType::kInt64, {1, 4, 0, 2, 3, 0, 1, 3, 2, 4}}));
  EXPECT_EQ(
      Out("sort", {x}, {{"descending", true}}, 1),
      (std::pair<DType, I>{DType::kInt64, {0, 2, 3, 1, 4, 2, 4, 0, 1, 3}}));
  EXPECT_EQ(
      Out("argsort", {x}, {{"dim", int64_t{0}}}),
      (std::pair<DType, I>{DType::kInt64, {1, 0, 0, 1, 0, 0, 1, 1, 0, 1}}));
  EXPECT_EQ(
      Out("argsort", {x}, {{"descending", true}}),
      (std::pair<DType, I>{DType::kInt64, {0, 2, 3, 1, 4, 2, 4, 0, 1, 3}}));
  // PyTorch's topk refuses bool ("topk_cpu" not implemented for 'Bool').
  EXPECT_EQ(Run("topk", {x}, {{"k", int64_t{2}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// clamp with number bounds promotes a bool tensor as PyTorch's clamp does:
// int64 for integral bounds, float32 for a fractional one; clamp_ cannot
// write that back into the bool tensor.
TEST_F(DTypeSupportTest, BoolClampPromotesWithItsBounds) {
  const Tensor b = Bools({true, false, true}, {3});
  EXPECT_EQ(Out("clamp", {b}, {{"min", 0.0}, {"max", 1.0}}),
            (std::pair<DType, I>{DType::kInt64, {1, 0, 1}}));
  EXPECT_EQ(Out("clamp", {b}, {{"max", 0.0}}),
            (std::pair<DType, I>{DType::kInt64, {0, 0, 0}}));
  auto half = Run("clamp", {b}, {{"min", 0.5}});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ((*half)[0].dtype(), DType::kFloat32);
  const float* v = (*half)[0].view().ptr<float>();
  EXPECT_EQ(std::vector<float>(v, v + 3), (std::vector<float>{1, 0.5f, 1}));
  EXPECT_EQ(Run("clamp_", {b}, {{"min", 0.0}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// int64 avg_pool2d: an int64 sum divided by the window's count with C's
// truncation (toward zero: -29.5 gives -29), as PyTorch's CPU kernel
// (values from torch.nn.functional.avg_pool2d).
TEST_F(DTypeSupportTest, Int64AvgPoolTruncates) {
  I x(16);
  for (int64_t i = 0; i < 16; ++i) x[i] = i * i - 40;
  // [[-40, -39, -36, -31], [-24, -15, -4, 9], [24, 41, 60, 81],
  //  [104, 129, 156, 185]]
  const Tensor t = Ints(x, {1, 1, 4, 4});
  // 2x2 windows: -118/4, -62/4, 298/4, 482/4.
  EXPECT_EQ(Out("avg_pool2d", {t}, {{"kernel_size", I{2}}}),
            (std::pair<DType, I>{DType::kInt64, {-29, -15, 74, 120}}));
  // 3x3, stride 2, padding 1: the padding counted (the corner is -118/9),
  // then not (-118/4).
  const std::map<std::string, AttrValue> window = {
      {"kernel_size", I{3}}, {"stride", I{2}}, {"padding", I{1}}};
  EXPECT_EQ(Out("avg_pool2d", {t}, window),
            (std::pair<DType, I>{DType::kInt64, {-13, -12, 28, 71}}));
  auto inside = window;
  inside["count_include_pad"] = false;
  EXPECT_EQ(Out("avg_pool2d", {t}, inside),
            (std::pair<DType, I>{DType::kInt64, {-29, -19, 43, 71}}));
  // As PyTorch, max_pool2d and adaptive_avg_pool2d refuse int64.
  EXPECT_EQ(Run("max_pool2d", {t}, {{"kernel_size", I{2}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      Run("adaptive_avg_pool2d", {t}, {{"output_size", I{2}}}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensord
