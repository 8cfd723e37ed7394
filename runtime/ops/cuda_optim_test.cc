// The fused CUDA optimizer steps (kernels/cuda/optim.h) against the
// composition they replace: the same sgd_step/adam_step calls, over several
// steps, on contiguous CUDA tensors (fused) and on transposed views of the
// same values (composed ops), float32 and float64. The fused step allocates
// nothing. Skips, saying why, without a CUDA device.
#include <cmath>
#include <map>
#include <string>
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

class CudaOptimTest : public testing::CudaDevicesTest {
 protected:
  CudaOptimTest() : CudaDevicesTest(/*session=*/1) {}

  // A [rows, cols] CUDA tensor of seeded normals (positive with `abs`, as
  // a second moment is), contiguous or a transposed view.
  Tensor Make(DType d, uint64_t seed, bool abs, bool transposed) {
    const Shape shape = {rows_, cols_};
    Tensor f =
        *Tensor::Empty(devices_->cpu(), DType::kFloat64, shape, ctx_.alloc);
    EXPECT_TRUE(
        cpu::FillRandom(cpu::Distribution::kNormal, seed, 0, f.view()).ok());
    if (abs) {
      double* p = f.view().ptr<double>();
      for (int64_t i = 0; i < f.numel(); ++i) p[i] = std::fabs(p[i]);
    }
    Tensor u = *ToDevice(f, cuda_, d, ctx_);
    if (!transposed) return u;
    Tensor base = *Tensor::Empty(cuda_, d, {cols_, rows_}, ctx_.alloc);
    Tensor view = base.AsStrided(shape, {1, rows_}, 0);
    EXPECT_TRUE(CopyOnDevice(cuda_, u.view(), view.view(), nullptr).ok());
    return view;
  }

  // Runs `op` for `steps` steps (attrs per step from `attrs_of`) on groups
  // of tensors made fused or composed; returns every tensor's final values
  // and the device allocations the steps made.
  std::vector<std::vector<double>> Run(
      const std::string& op, DType d, int groups, bool composed, int steps,
      const std::function<std::map<std::string, AttrValue>(int)>& attrs_of,
      int64_t* allocs) {
    // The lists of the update: params, grads, then state. The op reads the
    // grads from the params' .grad (Note [Optimizer steps read .grad]); Adam
    // also takes each parameter's step count, a CPU scalar.
    std::vector<Tensor> made, in;
    for (int g = 0; g < groups; ++g) {
      made.push_back(Make(d, 10 + g, /*abs=*/g == 3, composed));
    }
    // Before the copies into `in`: a Tensor copied earlier has no autograd
    // meta to share, so the step would see no .grad and skip the parameter
    // (both paths then did nothing, and matched).
    made[0].EnsureAutograd().grad = made[1];
    for (int g = 0; g < groups; ++g) {
      if (g != 1) in.push_back(made[g]);
    }
    if (op == "adam_step") {
      Tensor step =
          *Tensor::Empty(devices_->cpu(), DType::kInt64, {}, ctx_.alloc);
      EXPECT_TRUE(cpu::Fill(step.view(), 0).ok());
      in.push_back(step);
    }
    const OpDef* def = FindOp(op);
    EXPECT_NE(def, nullptr);
    const std::vector<double> initial = Values(made[0]);
    const int64_t before =
        cuda_->allocator()->GetStats().device.allocation[kAllPools].allocated;
    for (int s = 1; s <= steps; ++s) {
      auto attrs = Attrs::Build(op, def->attrs, attrs_of(s));
      EXPECT_TRUE(attrs.ok()) << attrs.status();
      auto out = RunOp(*def, in, *attrs, ctx_);
      EXPECT_TRUE(out.ok()) << op << ": " << out.status();
    }
    *allocs =
        cuda_->allocator()->GetStats().device.allocation[kAllPools].allocated -
        before;
    std::vector<std::vector<double>> values;
    for (const Tensor& t : made) values.push_back(Values(t));
    EXPECT_NE(values[0], initial) << op << ": the parameter did not move";
    return values;
  }

  void Compare(const std::string& what, DType d,
               const std::vector<std::vector<double>>& fused,
               const std::vector<std::vector<double>>& composed) {
    const double tol = d == DType::kFloat32 ? 2e-5 : 1e-12;
    ASSERT_EQ(fused.size(), composed.size());
    for (size_t g = 0; g < fused.size(); ++g) {
      for (size_t j = 0; j < fused[g].size(); ++j) {
        ASSERT_NEAR(fused[g][j], composed[g][j],
                    tol * (1 + std::fabs(composed[g][j])))
            << what << " tensor " << g << " [" << j << "]";
      }
    }
  }

  int64_t rows_ = 37, cols_ = 129;
};

TEST_F(CudaOptimTest, SgdFusedMatchesTheComposition) {
  struct Case {
    std::string name;
    std::map<std::string, AttrValue> attrs;
  };
  const std::vector<Case> cases = {
      {"plain", {{"lr", 0.1}}},
      {"weight decay, maximize",
       {{"lr", 0.05}, {"weight_decay", 0.01}, {"maximize", true}}},
      {"momentum, dampening",
       {{"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.1}}},
      {"nesterov", {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}}},
  };
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    for (const Case& c : cases) {
      const bool momentum = c.attrs.count("momentum") > 0;
      auto attrs_of = [&](int step) {
        auto a = c.attrs;
        a["n"] = int64_t{1};
        if (momentum) a["first_step"] = step == 1;
        return a;
      };
      const std::string what =
          "sgd " + c.name + " (" + std::string(DTypeName(d)) + ")";
      int64_t fused_allocs = 0, composed_allocs = 0;
      const int groups = momentum ? 3 : 2;
      auto fused =
          Run("sgd_step", d, groups, false, 3, attrs_of, &fused_allocs);
      auto composed =
          Run("sgd_step", d, groups, true, 3, attrs_of, &composed_allocs);
      EXPECT_EQ(fused_allocs, 0)
          << what << ": the fused step allocates nothing";
      EXPECT_GT(composed_allocs, 0)
          << what << ": the views took the composition";
      Compare(what, d, fused, composed);
    }
  }
}

TEST_F(CudaOptimTest, AdamFusedMatchesTheComposition) {
  struct Case {
    std::string name;
    std::map<std::string, AttrValue> attrs;
  };
  const std::vector<Case> cases = {
      {"plain", {{"lr", 1e-2}}},
      {"weight decay", {{"lr", 1e-2}, {"weight_decay", 0.1}}},
      {"adamw, maximize",
       {{"lr", 1e-2},
        {"weight_decay", 0.1},
        {"decoupled_weight_decay", true},
        {"maximize", true}}},
  };
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    for (const Case& c : cases) {
      auto attrs_of = [&](int /*step*/) {
        auto a = c.attrs;
        a["n"] = int64_t{1};
        return a;
      };
      const std::string what =
          "adam " + c.name + " (" + std::string(DTypeName(d)) + ")";
      int64_t fused_allocs = 0, composed_allocs = 0;
      auto fused = Run("adam_step", d, 4, false, 3, attrs_of, &fused_allocs);
      auto composed =
          Run("adam_step", d, 4, true, 3, attrs_of, &composed_allocs);
      EXPECT_EQ(fused_allocs, 0) << what;
      EXPECT_GT(composed_allocs, 0) << what;
      Compare(what, d, fused, composed);
    }
  }
}

}  // namespace
}  // namespace tensord
