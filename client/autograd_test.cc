// Local argument checking of the autograd and optimizer API: failures the
// client sees itself come back as statuses, with nothing sent.
#include "client/autograd.h"

#include "client/optim.h"
#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(AutogradLocalErrors, UndefinedTensors) {
  Tensor undefined;
  EXPECT_EQ(undefined.backward().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(undefined.grad().ok());
  EXPECT_FALSE(undefined.set_grad(Tensor()).ok());
  EXPECT_FALSE(undefined.set_requires_grad(true).ok());
  EXPECT_FALSE(undefined.requires_grad_().status().ok());
  EXPECT_FALSE(undefined.is_leaf().ok());
  EXPECT_EQ(autograd::grad({}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(autograd::grad({undefined}, {undefined}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AutogradLocalErrors, PoisonedTensorsCarryTheirError) {
  Tensor bad = Tensor::FromError(absl::InvalidArgumentError("boom"));
  EXPECT_EQ(bad.backward().message(), "boom");
  EXPECT_EQ(bad.grad().status().message(), "boom");
  EXPECT_EQ(bad.detach().status().message(), "boom");
}

TEST(OptimLocalErrors, UndefinedParameters) {
  optim::SGD sgd({Tensor()}, {.lr = 0.1});
  EXPECT_EQ(sgd.step().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(sgd.zero_grad(/*set_to_none=*/false).code() ==
              absl::StatusCode::kInvalidArgument);
  optim::Adam adam({}, optim::AdamWOptions());
  EXPECT_TRUE(adam.step().ok());  // nothing to do
  EXPECT_EQ(adam.options().weight_decay, 1e-2);
  EXPECT_TRUE(adam.options().decoupled_weight_decay);
}

}  // namespace
}  // namespace tensord
