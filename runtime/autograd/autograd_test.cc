// The engine on hand-computed gradients: chains, broadcasting, accumulation,
// retain_graph, version checks, second order and freed saved tensors.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/autograd/engine.h"
#include "runtime/autograd/node.h"
#include "runtime/autograd/recorder.h"
#include "runtime/device.h"
#include "runtime/ops/compose.h"

namespace tensord {
namespace {

class AutogradTest : public ::testing::Test {
 protected:
  AutogradTest() {
    devices_ = DeviceRegistry::Create();
    ctx_.device = devices_->cpu();
    ctx_.devices = devices_.get();
    ctx_.generator = &generator_;
    ctx_.alloc.session = 7;
    grad_ctx_ = ctx_;
    grad_ctx_.recorder = &recorder_;
  }

  Tensor Leaf(std::vector<double> values, Shape shape, bool requires_grad) {
    auto t = Tensor::Empty(devices_->cpu(), DType::kFloat64, shape, ctx_.alloc);
    EXPECT_TRUE(t.ok());
    std::memcpy(t->data(), values.data(), values.size() * sizeof(double));
    t->EnsureAutograd().requires_grad = requires_grad;
    return *t;
  }
  // Runs op `name` with grad mode on (recorded).
  Tensor Op(const std::string& name, std::vector<Tensor> in,
            std::map<std::string, AttrValue> attrs = {}) {
    auto out = CallOp(name, std::move(in), std::move(attrs), grad_ctx_);
    EXPECT_TRUE(out.ok()) << out.status();
    return (*out)[0];
  }
  static std::vector<double> Values(const Tensor& t) {
    const double* p = static_cast<const double*>(t.data());
    return std::vector<double>(p, p + t.numel());
  }
  absl::Status Backward(const Tensor& root, bool retain = false) {
    BackwardOptions o;
    o.retain_graph = retain;
    return RunBackward({root}, {}, {}, o, ctx_).status();
  }
  static std::vector<double> Grad(const Tensor& t) {
    return Values(t.autograd()->grad);
  }
  int64_t Bytes() const {
    return devices_->cpu()->allocator()->SessionBytes(7);
  }

  std::unique_ptr<DeviceRegistry> devices_;
  Generator generator_;
  GraphRecorder recorder_;
  OpContext ctx_, grad_ctx_;
};

TEST_F(AutogradTest, ChainRule) {
  Tensor x = Leaf({1, 2, 3}, {3}, true);
  Tensor y = Op("exp", {Op("mul", {x, x})});  // d/dx exp(x^2) = 2x exp(x^2)
  EXPECT_EQ(y.grad_fn()->name(), "ExpBackward0");
  ASSERT_TRUE(Backward(Op("sum", {y})).ok());
  std::vector<double> g = Grad(x);
  for (int i = 0; i < 3; ++i) {
    const double v = i + 1;
    EXPECT_NEAR(g[i], 2 * v * std::exp(v * v), 1e-9 * std::exp(v * v));
  }
}

TEST_F(AutogradTest, BroadcastGradientsAreSummedToInputShapes) {
  Tensor a = Leaf({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  Tensor b = Leaf({10, 20, 30}, {3}, true);
  Tensor c = Leaf({2}, {}, true);
  ASSERT_TRUE(Backward(Op("sum", {Op("mul", {Op("add", {a, b}), c})})).ok());
  EXPECT_EQ(Grad(a), std::vector<double>(6, 2));
  EXPECT_EQ(Grad(b), std::vector<double>(3, 4));      // 2 rows x c
  EXPECT_EQ(Grad(c), std::vector<double>{21 + 120});  // sum(a + b)
}

TEST_F(AutogradTest, GradientsAccumulateAcrossBackwardCalls) {
  Tensor x = Leaf({1, 2}, {2}, true);
  ASSERT_TRUE(Backward(Op("sum", {Op("mul", {x, x})})).ok());
  ASSERT_TRUE(Backward(Op("sum", {Op("mul", {x, x})})).ok());
  EXPECT_EQ(Grad(x), (std::vector<double>{4, 8}));
  // Used twice in one graph: both paths add up.
  Tensor z = Leaf({3}, {}, true);
  ASSERT_TRUE(Backward(Op("add", {z, Op("mul", {z, z})})).ok());
  EXPECT_EQ(Grad(z), std::vector<double>{7});
}

TEST_F(AutogradTest, SecondBackwardNeedsRetainGraph) {
  Tensor x = Leaf({1, 2}, {2}, true);
  Tensor y = Op("sum", {Op("mul", {x, x})});
  ASSERT_TRUE(Backward(y, /*retain=*/true).ok());
  ASSERT_TRUE(Backward(y).ok());
  EXPECT_EQ(Grad(x), (std::vector<double>{4, 8}));
  absl::Status again = Backward(y);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("backward through the graph a second time"),
            std::string::npos)
      << again;
}

TEST_F(AutogradTest, InPlaceChangeOfASavedTensorIsAnError) {
  Tensor x = Leaf({1, 2}, {2}, true);
  Tensor h = Op("add", {x, Leaf({1}, {}, false)});  // non-leaf
  Tensor y = Op("mul", {h, h});                     // saves h (version 0)
  Op("add_", {h, Leaf({1}, {}, false)});            // h is now version 1
  absl::Status s = Backward(Op("sum", {y}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("modified by an inplace operation: the input 0 of "
                             "mul (saved at version 0) is now at version 1"),
            std::string::npos)
      << s;
}

TEST_F(AutogradTest, InPlaceOnALeafThatRequiresGradIsRefused) {
  Tensor x = Leaf({1, 2}, {2}, true);
  auto out = CallOp("mul_", {x, Leaf({2}, {}, false)}, {}, grad_ctx_);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("a leaf Variable that requires grad"),
            std::string::npos);
}

TEST_F(AutogradTest, InPlaceOnANonLeafRebasesItsHistory) {
  Tensor x = Leaf({1, 2}, {2}, true);
  Tensor h = Op("mul", {x, Leaf({3}, {}, false)});
  Op("mul_", {h, x});  // h = 3x * x
  EXPECT_EQ(h.grad_fn()->name(), "MulBackward0");
  ASSERT_TRUE(Backward(Op("sum", {h})).ok());
  EXPECT_EQ(Grad(x), (std::vector<double>{6, 12}));  // d(3x^2) = 6x
}

TEST_F(AutogradTest, SecondOrder) {
  Tensor x = Leaf({1, 2, -3}, {3}, true);
  Tensor y = Op("sum", {Op("pow", {x, Leaf({3}, {}, false)})});
  BackwardOptions o;
  o.create_graph = o.retain_graph = true;
  auto g = RunBackward({y}, {}, {x}, o, grad_ctx_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(Values((*g)[0]), (std::vector<double>{3, 12, 27}));  // 3x^2
  ASSERT_TRUE((*g)[0].requires_grad());
  auto gg = RunBackward({Op("sum", {(*g)[0]})}, {}, {x}, {}, ctx_);
  ASSERT_TRUE(gg.ok()) << gg.status();
  EXPECT_EQ(Values((*gg)[0]), (std::vector<double>{6, 12, -18}));  // 6x
}

TEST_F(AutogradTest, GradOfInputsLeavesDotGradAlone) {
  Tensor x = Leaf({1, 2}, {2}, true), unused = Leaf({5}, {}, true);
  Tensor y = Op("sum", {Op("mul", {x, x})});
  BackwardOptions o;
  o.retain_graph = true;
  EXPECT_FALSE(RunBackward({y}, {}, {x, unused}, o, ctx_).ok());
  o.allow_unused = true;
  auto g = RunBackward({y}, {}, {x, unused}, o, ctx_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(Values((*g)[0]), (std::vector<double>{2, 4}));
  EXPECT_FALSE((*g)[1].defined());
  EXPECT_FALSE(x.autograd()->grad.defined());
}

TEST_F(AutogradTest, NonScalarRootsNeedAGradient) {
  Tensor x = Leaf({1, 2}, {2}, true);
  Tensor y = Op("mul", {x, x});
  EXPECT_EQ(Backward(y, true).code(), absl::StatusCode::kInvalidArgument);
  Tensor v = Leaf({1, 10}, {2}, false);
  ASSERT_TRUE(RunBackward({y}, {v}, {}, {}, ctx_).ok());
  EXPECT_EQ(Grad(x), (std::vector<double>{2, 40}));
  EXPECT_EQ(Backward(Leaf({1}, {}, false)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(AutogradTest, SavedTensorsAreFreedAfterBackward) {
  Tensor x = Leaf(std::vector<double>(1 << 16, 0.5), {1 << 16}, true);
  const int64_t base = Bytes();
  Tensor loss;
  {
    Tensor h = Op("exp", {x});  // saves its output
    Tensor h2 = Op("tanh", {h});
    loss = Op("sum", {Op("mul", {h2, h2})});
  }
  const int64_t forward = Bytes();
  EXPECT_GE(forward - base, 2 * (int64_t{1} << 16) * 8);  // exp, tanh outs
  ASSERT_TRUE(Backward(loss).ok());
  // Only .grad (and the tiny loss) remain: every saved tensor went back.
  EXPECT_LE(Bytes() - base, (int64_t{1} << 16) * 8 + 4096);
  // Releasing the last tensor frees the graph structure too.
  x.autograd()->grad = Tensor();
  loss = Tensor();
  EXPECT_EQ(Bytes(), base);
}

TEST_F(AutogradTest, ReleasingTheRootFreesTheGraphWithoutBackward) {
  Tensor x = Leaf(std::vector<double>(4096, 1.0), {4096}, true);
  const int64_t base = Bytes();
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = Op("mul", {y, x});  // deep chain
  EXPECT_GT(Bytes(), base);
  y = Tensor();  // iterative release: no stack overflow
  EXPECT_EQ(Bytes(), base);
}

}  // namespace
}  // namespace tensord
