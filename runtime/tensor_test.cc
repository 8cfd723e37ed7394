#include "runtime/tensor.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(TensorTest, ViewsShareStorageAndBroadcastViewsHaveZeroStrides) {
  auto devices = DeviceRegistry::Create();
  auto t = Tensor::Empty(devices->cpu(), DType::kFloat32, {2, 3}, {1});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_EQ(t->nbytes(), 24u);
  Tensor transposed = t->AsStrided({3, 2}, {1, 3}, 0);
  EXPECT_EQ(transposed.storage(), t->storage());
  EXPECT_FALSE(transposed.is_contiguous());
  StridedView v = t->BroadcastView({4, 2, 3});
  EXPECT_EQ(v.ndim, 3);
  EXPECT_EQ(v.strides[0], 0);
  EXPECT_EQ(v.strides[1], 3);
  Tensor row = t->AsStrided({1, 3}, {3, 1}, 3);
  StridedView rv = row.BroadcastView({2, 3});
  EXPECT_EQ(rv.strides[0], 0);
  EXPECT_EQ(static_cast<char*>(rv.data) - static_cast<char*>(t->data()), 12);
}

TEST(TensorTest, StorageAccountsToTheSessionAndReturnsOnRelease) {
  auto devices = DeviceRegistry::Create();
  Allocator* alloc = devices->cpu()->allocator();
  const int64_t before = alloc->SessionBytes(7);
  {
    auto t = Tensor::Empty(devices->cpu(), DType::kFloat64, {100}, {7});
    ASSERT_TRUE(t.ok());
    EXPECT_GE(alloc->SessionBytes(7) - before, 800);
  }
  EXPECT_EQ(alloc->SessionBytes(7), before);
}

TEST(TensorTest, EmptyRejectsBadShapes) {
  auto devices = DeviceRegistry::Create();
  EXPECT_FALSE(Tensor::Empty(devices->cpu(), DType::kFloat32, {-1}, {1}).ok());
  EXPECT_FALSE(Tensor::Empty(devices->cpu(), DType::kFloat32,
                             {1LL << 40, 1LL << 30}, {1})
                   .ok());
}

TEST(DeviceRegistryTest, CpuIsAlwaysThere) {
  auto devices = DeviceRegistry::Create();
  EXPECT_EQ(devices->cpu()->name(), "cpu");
  EXPECT_EQ(devices->Find("cpu"), devices->cpu());
  EXPECT_EQ(devices->Find("tpu:0"), nullptr);
}

}  // namespace
}  // namespace tensord
