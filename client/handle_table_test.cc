#include "client/handle_table.h"

#include <vector>

#include "gtest/gtest.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

v1::TensorMeta Meta(uint64_t handle, bool requires_grad) {
  v1::TensorMeta meta;
  meta.set_handle(handle);
  meta.set_dtype(v1::FLOAT32);
  meta.add_shape(2);
  meta.add_shape(3);
  meta.set_device("cpu");
  meta.set_requires_grad(requires_grad);
  meta.set_grad_fn("MulBackward0");
  return meta;
}

void SetFrom(HandleTable* table, const v1::TensorMeta& meta) {
  table->SetMeta(meta.handle(), meta.dtype(), meta.shape(), meta.device(),
                 meta.requires_grad(), meta.is_leaf(), &meta);
}

TEST(HandleTableTest, AHandleIsKnownOnceItsAckCame) {
  HandleTable table;
  const uint64_t first = table.Reserve(2);
  EXPECT_EQ(first, 1u);
  EXPECT_EQ(table.Reserve(1), 3u);
  table.Created(first, /*seq=*/4, nullptr);
  const HandleTable::Entry* entry = table.Find(first);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->seq, 4u);
  EXPECT_FALSE(entry->known);
  EXPECT_EQ(table.KnownBytes(first), std::nullopt);
  SetFrom(&table, Meta(first, false));
  EXPECT_TRUE(table.Find(first)->known);
  EXPECT_EQ(table.Find(first)->meta.grad_fn, "MulBackward0");
  EXPECT_EQ(table.KnownBytes(first), 24u);
  EXPECT_EQ(table.Find(first + 1), nullptr);  // reserved, never created
}

TEST(HandleTableTest, TheClientsRequiresGradWinsOverTheAck) {
  HandleTable table;
  table.Created(1, 1, nullptr);
  table.SetRequiresGrad(1, true);
  SetFrom(&table, Meta(1, false));
  EXPECT_TRUE(table.Find(1)->meta.requires_grad);
}

TEST(HandleTableTest, PoisonedAndReleasedHandles) {
  HandleTable table;
  table.Created(1, 1, nullptr);
  v1::TensorMeta poisoned = Meta(1, false);
  poisoned.mutable_error()->set_code(3);
  poisoned.mutable_error()->set_message("bad shapes");
  SetFrom(&table, poisoned);
  EXPECT_FALSE(table.Find(1)->meta.error.ok());
  EXPECT_EQ(table.KnownBytes(1), 0u);  // the stream reports it
  table.Erase(1);
  SetFrom(&table, Meta(1, false));  // an Ack after the release: ignored
  EXPECT_EQ(table.Find(1), nullptr);
}

TEST(HandleTableTest, AnUploadsMetaIsKnownAtOnce) {
  HandleTable table;
  HandleMeta meta;
  meta.shape = {4};
  table.Created(1, 1, &meta);
  EXPECT_TRUE(table.Find(1)->known);
  EXPECT_EQ(table.KnownBytes(1), 16u);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord
