// End to end training through the C++ client on the real daemon: a tiny
// linear regression, whose first SGD step is checked against gradients
// computed by hand, and whose loss must fall with SGD and Adam. Skips while
// the daemon has no autograd (Backward answered UNIMPLEMENTED) or no fused
// optimizer ops.
#include <sys/wait.h>

#include <cmath>
#include <vector>

#include "client/tensord_client.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"

namespace tensord {
namespace {

constexpr int kN = 8;
// Inputs x (kN x 2) and targets y = x @ [2, -3] + 0.5.
const std::vector<float> kX = {1, 0,   0,    1,   1, 1,  -1,   2,
                               2, 0.5, -0.5, 1.5, 3, -1, 0.25, -2};

std::vector<float> Targets() {
  std::vector<float> y(kN);
  for (int i = 0; i < kN; ++i) y[i] = 2 * kX[2 * i] - 3 * kX[2 * i + 1] + 0.5f;
  return y;
}

class TrainingTest : public testing::DaemonSuite {
 protected:
  void SetUp() override {
    ClientOptions options;
    options.address = daemon_->address();
    auto c = Client::Connect(options);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    Tensor probe = client_->FromVector<float>({1, 2}, {2}, {"", true});
    absl::Status s = (probe * 2.0).sum().backward();
    // A backward's errors come back from the next read (Note [Deferred
    // backward errors] in client/session_autograd.cc).
    if (s.ok()) s = client_->synchronize();
    if (s.code() == absl::StatusCode::kUnimplemented) {
      GTEST_SKIP() << "the daemon has no autograd yet: " << s;
    }
    ASSERT_TRUE(s.ok()) << s;
  }
  void NeedOptimizers() {
    if (client_->FindOp("sgd_step") == nullptr ||
        client_->FindOp("adam_step") == nullptr) {
      GTEST_SKIP() << "the daemon has no fused optimizer ops yet";
    }
  }
  Tensor Leaf(std::vector<float> v, std::vector<int64_t> shape) {
    return client_->FromVector<float>(v, shape, {"", true});
  }
  // mean((x @ w + b - y)^2)
  Tensor Loss(const Tensor& w, const Tensor& b) {
    Tensor x = client_->FromVector<float>(kX, {kN, 2});
    Tensor y = client_->FromVector<float>(Targets(), {kN, 1});
    Tensor r = x.matmul(w) + b - y;
    return (r * r).mean();
  }

  std::unique_ptr<Client> client_;
};

TEST_F(TrainingTest, GradientsMatchHandComputedValues) {
  Tensor w = Leaf({0.5f, -0.5f}, {2, 1});
  Tensor b = Leaf({0.1f}, {1});
  EXPECT_FALSE(w.grad()->defined());  // None before any backward
  ASSERT_TRUE(Loss(w, b).backward().ok());
  // r = x w + b - y; dL/dw = 2/N x^T r; dL/db = 2/N sum r.
  const std::vector<float> y = Targets();
  double gw0 = 0, gw1 = 0, gb = 0;
  for (int i = 0; i < kN; ++i) {
    const double r = kX[2 * i] * 0.5 - kX[2 * i + 1] * 0.5 + 0.1 - y[i];
    gw0 += 2.0 / kN * kX[2 * i] * r;
    gw1 += 2.0 / kN * kX[2 * i + 1] * r;
    gb += 2.0 / kN * r;
  }
  auto gw = w.grad()->to_vector<float>();
  ASSERT_TRUE(gw.ok()) << gw.status();
  EXPECT_NEAR((*gw)[0], gw0, 1e-4);
  EXPECT_NEAR((*gw)[1], gw1, 1e-4);
  EXPECT_NEAR(*b.grad()->item<float>(), gb, 1e-4);
  EXPECT_TRUE(*w.is_leaf());
  EXPECT_FALSE(*Loss(w, b).is_leaf());
  EXPECT_FALSE(Loss(w, b).grad_fn()->empty());
  // autograd::grad leaves .grad alone and returns the same values.
  auto g = autograd::grad({Loss(w, b)}, {w, b});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_NEAR((*g)[0].to_vector<float>()->at(0), gw0, 1e-4);
  EXPECT_NEAR(*(*g)[1].item<float>(), gb, 1e-4);
  EXPECT_NEAR(*b.grad()->item<float>(), gb, 1e-4);
  // Backward twice through a freed graph is an error, reported by the next
  // read (FailingBackwardRaisesAtTheNextRead); the session goes on.
  Tensor loss = Loss(w, b);
  ASSERT_TRUE(loss.backward().ok());
  ASSERT_TRUE(loss.backward().ok());
  EXPECT_FALSE(client_->synchronize().ok());
  EXPECT_TRUE(Loss(w, b).backward(Tensor(), /*retain_graph=*/true).ok());
  EXPECT_TRUE(client_->synchronize().ok());
  ASSERT_TRUE(w.set_grad(Tensor()).ok());
  EXPECT_FALSE(w.grad()->defined());
}

TEST_F(TrainingTest, NoGradGuardAndDetach) {
  Tensor w = Leaf({1, 2}, {2});
  {
    NoGradGuard guard(*client_);
    EXPECT_FALSE(*(w * 2.0).requires_grad());
  }
  EXPECT_TRUE(*(w * 2.0).requires_grad());
  EXPECT_FALSE(*w.detach().requires_grad());
  Tensor c = client_->FromVector<float>({3}, {1});
  EXPECT_FALSE(*c.requires_grad());
  EXPECT_TRUE(*c.requires_grad_().requires_grad());
}

TEST_F(TrainingTest, SgdFirstStepMatchesHandComputedUpdateAndLossFalls) {
  NeedOptimizers();
  Tensor w = Leaf({0.5f, -0.5f}, {2, 1});
  Tensor b = Leaf({0.1f}, {1});
  optim::SGD opt({w, b}, {.lr = 0.05, .momentum = 0.9});
  ASSERT_TRUE(opt.zero_grad().ok());
  Tensor loss0 = Loss(w, b);
  ASSERT_TRUE(loss0.backward().ok());
  const float gw0 = w.grad()->to_vector<float>()->at(0);
  const float gb = *b.grad()->item<float>();
  ASSERT_TRUE(opt.step().ok());
  // The first momentum step is plain SGD: p - lr * g.
  EXPECT_NEAR(w.to_vector<float>()->at(0), 0.5f - 0.05f * gw0, 1e-6);
  EXPECT_NEAR(*b.item<float>(), 0.1f - 0.05f * gb, 1e-6);
  float previous = *loss0.item<float>();
  float last = previous;
  for (int step = 0; step < 40; ++step) {
    ASSERT_TRUE(opt.zero_grad().ok());
    Tensor loss = Loss(w, b);
    ASSERT_TRUE(loss.backward().ok());
    ASSERT_TRUE(opt.step().ok());
    last = *loss.item<float>();
  }
  EXPECT_LT(last, previous * 0.05f) << "from " << previous;
  EXPECT_TRUE(client_->synchronize().ok());
}

TEST_F(TrainingTest, AdamAndAdamWReduceTheLoss) {
  NeedOptimizers();
  for (bool decoupled : {false, true}) {
    Tensor w = Leaf({0.5f, -0.5f}, {2, 1});
    Tensor b = Leaf({0.1f}, {1});
    optim::AdamOptions o =
        decoupled ? optim::AdamWOptions() : optim::AdamOptions();
    o.lr = 0.1;
    optim::Adam opt({w, b}, o);
    float first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
      ASSERT_TRUE(opt.zero_grad(/*set_to_none=*/false).ok());
      Tensor loss = Loss(w, b);
      ASSERT_TRUE(loss.backward().ok());
      ASSERT_TRUE(opt.step().ok());
      last = *loss.item<float>();
      if (step == 0) first = last;
    }
    ASSERT_EQ(opt.steps().size(), 2u);
    for (const Tensor& count : opt.steps()) {
      EXPECT_EQ(*count.item<float>(), 60.0f) << "decoupled=" << decoupled;
    }
    EXPECT_LT(last, first * 0.1f) << "decoupled=" << decoupled;
  }
}

// The daemon reads each .grad (Note [Optimizer steps read .grad]): a
// parameter that never has one is skipped by both optimizers, its value and
// Adam step count untouched, while the others step; zero_grad(false) zeroes
// the gradients that exist, on the daemon.
TEST_F(TrainingTest, StepsSkipParametersWithoutGradient) {
  NeedOptimizers();
  Tensor w = Leaf({0.5f, -0.5f}, {2, 1});
  Tensor b = Leaf({0.1f}, {1});
  Tensor unused = Leaf({7.0f}, {1});
  optim::SGD sgd({w, b, unused}, {.lr = 0.05, .momentum = 0.9});
  optim::Adam adam({w, b, unused}, optim::AdamOptions());
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(sgd.zero_grad(/*set_to_none=*/false).ok());
    ASSERT_TRUE(Loss(w, b).backward().ok());
    ASSERT_TRUE(sgd.step().ok());
    ASSERT_TRUE(adam.step().ok());
  }
  EXPECT_EQ(*unused.item<float>(), 7.0f);
  EXPECT_FALSE(unused.grad()->defined());
  EXPECT_NE(w.to_vector<float>()->at(0), 0.5f);
  std::vector<float> counts;
  for (const Tensor& c : adam.steps()) counts.push_back(*c.item<float>());
  EXPECT_EQ(counts, (std::vector<float>{3, 3, 0}));
  ASSERT_TRUE(sgd.zero_grad(/*set_to_none=*/false).ok());
  EXPECT_EQ(w.grad()->to_vector<float>().value(), (std::vector<float>{0, 0}));
  EXPECT_TRUE(client_->synchronize().ok());
}

// Issue 27: uploading the batch, zero_grad, backward() and step() are
// queued; a step's one wait is the loss read the program asks for
// (Client::waits counts blocking waits, each at least a round trip to a
// remote daemon), from the first step on. The session is remote-like (no
// shared memory), as tools/bench/wan_bench.py runs it.
TEST_F(TrainingTest, AStepWaitsOnceForItsLossRead) {
  NeedOptimizers();
  ClientOptions options;
  options.address = daemon_->address();
  options.shm = ClientOptions::ShmMode::kOff;
  auto c = Client::Connect(options);
  ASSERT_TRUE(c.ok()) << c.status();
  std::unique_ptr<Client> client = *std::move(c);
  for (int which = 0; which < 3; ++which) {
    Tensor w = client->FromVector<float>({0.5f, -0.5f}, {2, 1}, {"", true});
    Tensor b = client->FromVector<float>({0.1f}, {1}, {"", true});
    optim::SGD sgd({w, b}, {.lr = 0.05, .momentum = which == 1 ? 0.9 : 0.0});
    optim::Adam adam({w, b}, optim::AdamOptions());
    ASSERT_TRUE(client->synchronize().ok());
    std::vector<int64_t> waits;
    std::vector<float> losses;
    for (int step = 0; step < 4; ++step) {
      const int64_t before = client->waits();
      Tensor x = client->FromVector<float>(kX, {kN, 2});
      Tensor y = client->FromVector<float>(Targets(), {kN, 1});
      const bool set_to_none = step % 2 == 0;
      ASSERT_TRUE((which == 2 ? adam.zero_grad(set_to_none)
                              : sgd.zero_grad(set_to_none))
                      .ok());
      Tensor r = x.matmul(w) + b - y;
      Tensor loss = (r * r).mean();
      ASSERT_TRUE(loss.backward().ok());
      ASSERT_TRUE((which == 2 ? adam.step() : sgd.step()).ok());
      absl::StatusOr<float> value = loss.item<float>();
      ASSERT_TRUE(value.ok()) << value.status();
      losses.push_back(*value);
      waits.push_back(client->waits() - before);
    }
    EXPECT_EQ(waits, (std::vector<int64_t>{1, 1, 1, 1}))
        << "blocking waits per step, optimizer " << which;
    EXPECT_LT(losses.back(), losses.front()) << "optimizer " << which;
  }
}

// Note [Deferred backward errors]: backward() does not wait, so a failing
// one (here a second pass through a freed graph) is reported by the next
// read, naming what happened; that read's value is lost, the session goes
// on and later reads and backwards work.
TEST_F(TrainingTest, FailingBackwardRaisesAtTheNextRead) {
  Tensor w = Leaf({0.5f, -0.5f}, {2, 1});
  Tensor b = Leaf({0.1f}, {1});
  Tensor loss = Loss(w, b);
  ASSERT_TRUE(loss.backward().ok());
  const int64_t before = client_->waits();
  ASSERT_TRUE(loss.backward().ok());  // queued: the error comes later
  EXPECT_EQ(client_->waits(), before);
  absl::StatusOr<float> read = loss.item<float>();
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("a second time"), std::string::npos)
      << read.status();
  // Reported once: the next reads and a fresh backward are fine.
  EXPECT_TRUE(loss.item<float>().ok());
  absl::Status after = client_->synchronize();
  EXPECT_TRUE(after.ok()) << after;
  ASSERT_TRUE(w.set_grad(Tensor()).ok());
  ASSERT_TRUE(Loss(w, b).backward().ok());
  absl::StatusOr<std::vector<float>> grad = w.grad()->to_vector<float>();
  ASSERT_TRUE(grad.ok()) << grad.status();
  EXPECT_EQ(grad->size(), 2u);
  EXPECT_TRUE(client_->synchronize().ok());
}

}  // namespace
}  // namespace tensord
