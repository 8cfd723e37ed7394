// The op table on CUDA: every row with a CUDA kernel (and every composite
// and view row, which run through such rows) agrees with the CPU on the
// row's examples, contiguous and strided. Without a GPU these tests skip
// and say why. The rows without a CUDA kernel are known_cpu_only.h's list
// (checked by known_cpu_only_test).
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/random.h"
#include "runtime/cuda_discovery.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "runtime/testing/cuda_devices_test.h"

namespace tensord {
namespace {

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

Tensor MakeInput(Device* cpu, const AllocContext& alloc, const Shape& shape,
                 DType dtype, uint64_t seed) {
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
void ExpectClose(const std::vector<double>& a, const std::vector<double>& b,
                 double tol, const std::string& what) {
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
