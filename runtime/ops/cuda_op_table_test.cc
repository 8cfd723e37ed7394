// The op table on CUDA: every row with a CUDA kernel (and every composite
// and view row, which run through such rows) agrees with the CPU on the
// row's examples, contiguous and strided, in float32 and float64; bool and
// int64 rows, seeded draws, copies and bad indices too. Without a GPU these
// tests skip and say why. The float16/bfloat16 rows are
// cuda_half_op_table_test.cc's; the rows without a CUDA kernel are
// known_cpu_only.h's list (checked by known_cpu_only_test).
#include <map>
#include <string>
#include <tuple>
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

// Integer inputs are zeros (valid indices everywhere) except scatter's
// index, whose rows must be distinct: with a repeated index which write
// wins is undefined on CUDA, as in PyTorch.
void DistinctScatterRows(const OpDef& op, size_t input, Tensor* t) {
  if (op.name != "scatter" || input != 1) return;
  int64_t* p = static_cast<int64_t*>(t->view().data);
  const int64_t cols = t->shape().back();
  for (int64_t i = 0; i < t->numel(); ++i) p[i] = i / cols;
}

TEST_F(CudaOpTableTest, EveryRowAgreesWithCpu) {
  for (const OpDef& op : OpTable()) {
    if (op.infer != nullptr && op.cuda == nullptr) continue;
    if (op.name == "empty" || op.name == "empty_like") continue;
    std::vector<OpExample> examples = op.examples;
    if (examples.empty()) {
      OpExample e;
      e.shapes.assign(std::max(op.min_inputs, 0), Shape{2, 3});
      examples.push_back(e);
    }
    for (const OpExample& ex : examples) {
      for (DType float_type : {DType::kFloat32, DType::kFloat64}) {
        for (bool strided : {false, true}) {
          std::vector<Tensor> cpu_in, cuda_in;
          for (size_t i = 0; i < ex.shapes.size(); ++i) {
            DType d = i < ex.dtypes.size() ? ex.dtypes[i] : DType::kFloat32;
            if (d == DType::kFloat32) d = float_type;
            Tensor t =
                MakeInput(devices_->cpu(), ctx_.alloc, ex.shapes[i], d, i + 1);
            DistinctScatterRows(op, i, &t);
            auto g = ToDevice(t, cuda_, d, ctx_);
            ASSERT_TRUE(g.ok()) << op.name << ": " << g.status();
            Tensor u = *g;
            // view and as_strided read the storage's layout, not the values:
            // a transposed copy is another input to them.
            if (strided && u.ndim() >= 2 && op.name != "view" &&
                op.name != "as_strided") {
              u = Transposed(u);
            }
            cpu_in.push_back(t);
            cuda_in.push_back(u);
          }
          const std::string what = op.name + " (" +
                                   std::string(DTypeName(float_type)) +
                                   (strided ? ", strided)" : ")");
          auto want = Run(op, cpu_in, ex.attrs, devices_->cpu(), 7);
          auto got = Run(op, cuda_in, ex.attrs, cuda_, 7);
          ASSERT_EQ(want.ok(), got.ok()) << what << ": cpu " << want.status()
                                         << " vs cuda " << got.status();
          if (!want.ok()) continue;
          ASSERT_EQ(want->size(), got->size()) << what;
          for (size_t k = 0; k < want->size(); ++k) {
            if (!(*got)[k].defined()) continue;
            EXPECT_EQ((*got)[k].device(), cuda_) << what;
            EXPECT_EQ((*got)[k].shape(), (*want)[k].shape()) << what;
            EXPECT_EQ((*got)[k].dtype(), (*want)[k].dtype()) << what;
            const auto a = Values((*want)[k]), b = Values((*got)[k]);
            ASSERT_EQ(a.size(), b.size()) << what;
            const double tol = float_type == DType::kFloat32 ? 1e-4 : 1e-10;
            ExpectClose(a, b, tol, what + " output " + std::to_string(k));
          }
        }
      }
    }
  }
}

// The rows on the bool and int64 operands PyTorch takes for them
// (dtype_support_test.cc has their hand-computed values): patterned bools
// (MakeInput's are all true), mixed with int64, int64 avg_pool2d,
// contiguous and transposed, equal to the CPU's results exactly.
TEST_F(CudaOpTableTest, BoolAndIntegerRowsMatchCpu) {
  Tensor a = *Tensor::Empty(devices_->cpu(), DType::kBool, {5, 6}, ctx_.alloc);
  Tensor b = *Tensor::Empty(devices_->cpu(), DType::kBool, {5, 6}, ctx_.alloc);
  Tensor n = *Tensor::Empty(devices_->cpu(), DType::kInt64, {6}, ctx_.alloc);
  Tensor img =
      *Tensor::Empty(devices_->cpu(), DType::kInt64, {2, 3, 7, 7}, ctx_.alloc);
  for (int64_t i = 0; i < 30; ++i) {
    a.view().ptr<bool>()[i] = (i * 7) % 3 == 0;
    b.view().ptr<bool>()[i] = (i * 5) % 4 < 2;
  }
  for (int64_t i = 0; i < 6; ++i) n.view().ptr<int64_t>()[i] = 2 * i - 5;
  for (int64_t i = 0; i < img.numel(); ++i) {
    img.view().ptr<int64_t>()[i] = (i * 37) % 19 - 9;
  }
  const AttrValue three = std::vector<int64_t>{3},
                  two = std::vector<int64_t>{2}, one = std::vector<int64_t>{1};
  using AttrMap = std::map<std::string, AttrValue>;
  const std::vector<std::tuple<std::string, std::vector<Tensor>, AttrMap>>
      cases = {
          {"sign", {a}, {}},
          {"fmax", {a, b}, {}},
          {"fmin", {a, b}, {}},
          {"maximum", {a, b}, {}},
          {"minimum", {a, b}, {}},
          {"clamp_min", {a, b}, {}},
          {"clamp_max", {a, b}, {}},
          {"fmax", {a, n}, {}},
          {"fmin", {n, b}, {}},
          {"clamp_min", {n, a}, {}},
          {"sort", {a}, {}},
          {"sort", {b}, {{"dim", int64_t{0}}, {"descending", true}}},
          {"argsort", {a}, {{"dim", int64_t{0}}}},
          {"clamp", {a}, {{"min", 0.0}, {"max", 1.0}}},
          {"avg_pool2d",
           {img},
           {{"kernel_size", three}, {"stride", two}, {"padding", one}}},
          {"avg_pool2d",
           {img},
           {{"kernel_size", three},
            {"padding", one},
            {"ceil_mode", true},
            {"count_include_pad", false}}},
      };
  for (const auto& [name, cpu_in, attrs] : cases) {
    for (bool strided : {false, true}) {
      std::vector<Tensor> cuda_in;
      for (const Tensor& t : cpu_in) {
        auto g = ToDevice(t, cuda_, t.dtype(), ctx_);
        ASSERT_TRUE(g.ok()) << name << ": " << g.status();
        cuda_in.push_back(strided && g->ndim() >= 2 ? Transposed(*g) : *g);
      }
      const std::string what = name + (strided ? " (strided)" : "");
      auto want = Run(*FindOp(name), cpu_in, attrs, devices_->cpu(), 0);
      auto got = Run(*FindOp(name), cuda_in, attrs, cuda_, 0);
      ASSERT_TRUE(want.ok()) << what << ": " << want.status();
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      ASSERT_EQ(want->size(), got->size()) << what;
      for (size_t k = 0; k < want->size(); ++k) {
        EXPECT_EQ((*got)[k].dtype(), (*want)[k].dtype()) << what;
        EXPECT_EQ(Values((*got)[k]), Values((*want)[k])) << what << " " << k;
      }
    }
  }
}

// Seeded draws match the CPU's: the same Philox counters.
TEST_F(CudaOpTableTest, RandomMatchesCpu) {
  const OpDef* rand = FindOp("rand");
  ASSERT_NE(rand, nullptr);
  std::map<std::string, AttrValue> attrs{{"shape", std::vector<int64_t>{1000}},
                                         {"dtype", DType::kFloat64}};
  auto want = Run(*rand, {}, attrs, devices_->cpu(), 42);
  auto got = Run(*rand, {}, attrs, cuda_, 42);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(Values((*want)[0]), Values((*got)[0]));  // bit for bit
}

// to(device=...) round trips and keeps values; an out-of-range index on the
// GPU is a clean INVALID_ARGUMENT, not a sticky error.
TEST_F(CudaOpTableTest, CopiesAndBadIndices) {
  Tensor t = MakeInput(devices_->cpu(), ctx_.alloc, {3, 4}, DType::kFloat32, 3);
  auto g = ToDevice(t, cuda_, DType::kFloat16, ctx_);
  ASSERT_TRUE(g.ok()) << g.status();
  auto back = ToDevice(*g, devices_->cpu(), DType::kFloat32, ctx_);
  ASSERT_TRUE(back.ok());
  const auto a = Values(t), b = Values(*back);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-2);

  Tensor idx = *Tensor::Empty(devices_->cpu(), DType::kInt64, {1}, ctx_.alloc);
  idx.view().ptr<int64_t>()[0] = 99;
  auto gidx = ToDevice(idx, cuda_, DType::kInt64, ctx_);
  ASSERT_TRUE(gidx.ok());
  auto out = Run(*FindOp("index_select"), {*g, *gidx}, {{"dim", int64_t{0}}},
                 cuda_, 0);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_TRUE(cuda_->Synchronize(nullptr).ok());  // the context still works
}

}  // namespace
}  // namespace tensord
