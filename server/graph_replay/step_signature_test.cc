#include "server/graph_replay/step_signature.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tensord {
namespace {

// Older handles: metadata by id, storage by id (tests change both).
class FakeMeta : public HandleMetaSource {
 public:
  void AppendMeta(uint64_t id, std::string* out) const override {
    auto it = meta.find(id);
    absl::StrAppend(out, it == meta.end() ? "?" : it->second, ";");
  }
  const void* StorageOf(uint64_t id) const override {
    auto it = storage.find(id);
    return it == storage.end() ? nullptr : it->second;
  }
  absl::flat_hash_map<uint64_t, std::string> meta;
  absl::flat_hash_map<uint64_t, const void*> storage;
};

v1::Command Call(uint32_t op, std::initializer_list<uint64_t> in,
                 std::initializer_list<uint64_t> out) {
  v1::Command cmd;
  v1::Call* call = cmd.mutable_call();
  call->set_op_id(op);
  for (uint64_t id : in) call->add_inputs(id);
  for (uint64_t id : out) call->add_outputs(id);
  return cmd;
}

v1::Command Put(uint64_t handle, std::initializer_list<int64_t> shape) {
  v1::Command cmd;
  cmd.mutable_put()->set_handle(handle);
  cmd.mutable_put()->set_dtype(v1::FLOAT32);
  for (int64_t d : shape) cmd.mutable_put()->add_shape(d);
  cmd.mutable_put()->mutable_payload()->set_data(std::string(16, 'x'));
  cmd.mutable_put()->set_last(true);
  return cmd;
}

v1::Command Get(uint64_t handle, uint64_t request) {
  v1::Command cmd;
  cmd.mutable_get()->set_handle(handle);
  cmd.mutable_get()->set_request_id(request);
  return cmd;
}

v1::Command Release(std::initializer_list<uint64_t> ids) {
  v1::Command cmd;
  for (uint64_t id : ids) cmd.mutable_release()->add_handles(id);
  return cmd;
}

// One training-like step: x = put; h = matmul(x, w=1); l = sum(h); get l;
// release the last step's x, h, l. `base` is the first fresh id.
StepSignature Step(StepSignatureBuilder* b, uint64_t base, uint64_t prev,
                   int64_t batch = 8) {
  b->Add(Put(base, {batch, 4}));
  b->Add(Call(7, {base, 1}, {base + 1}));
  b->Add(Call(9, {base + 1}, {base + 2}));
  if (prev != 0) b->Add(Release({prev, prev + 1, prev + 2}));
  b->Add(Get(base + 2, base * 3));  // request ids differ per step
  return b->Finish();
}

TEST(StepSignatureTest, StepsEqualUpToFreshHandleIds) {
  FakeMeta meta;
  meta.meta[1] = "w f32[4,4]";
  StepSignatureBuilder b(&meta);
  Step(&b, 100, 0);  // setup-ish first step: no previous handles
  StepSignature s2 = Step(&b, 200, 100);
  StepSignature s3 = Step(&b, 300, 200);
  StepSignature s4 = Step(&b, 1000, 300);
  EXPECT_EQ(s2.bytes, s3.bytes);
  EXPECT_EQ(s3.bytes, s4.bytes);
  EXPECT_EQ(s3.commands, 5u);
  EXPECT_TRUE(s3.capturable);
  ASSERT_EQ(s3.fixed.size(), 1u);  // w, once
  EXPECT_EQ(s3.fixed[0].id, 1u);
}

TEST(StepSignatureTest, ShapeOpAttrOrFixedHandleChangesIt) {
  FakeMeta meta;
  meta.meta[1] = "w f32[4,4]";
  meta.meta[2] = "w2 f32[4,4]";
  StepSignatureBuilder b(&meta);
  Step(&b, 100, 0);
  const std::string base = Step(&b, 200, 100).bytes;
  EXPECT_NE(Step(&b, 300, 200, /*batch=*/9).bytes, base);  // a new shape

  b.Add(Put(400, {8, 4}));
  b.Add(Call(8, {400, 1}, {401}));  // another op
  b.Add(Call(9, {401}, {402}));
  b.Add(Release({300, 301, 302}));
  EXPECT_NE(b.Finish().bytes, base);

  auto attr_step = [&](uint64_t at, int64_t dim) {
    b.Add(Put(at, {8, 4}));
    v1::Command mm = Call(7, {at, 1}, {at + 1});
    (*mm.mutable_call()->mutable_attrs())["dim"].set_i(dim);
    b.Add(mm);
    b.Add(Get(at + 1, 1));
    return b.Finish().bytes;
  };
  attr_step(500, 0);
  const std::string dim0 = attr_step(600, 0);
  EXPECT_EQ(attr_step(700, 0), dim0);
  EXPECT_NE(attr_step(800, 1), dim0);

  auto weight_step = [&](uint64_t at, uint64_t w) {
    b.Add(Put(at, {8, 4}));
    b.Add(Call(7, {at, w}, {at + 1}));
    b.Add(Get(at + 1, 1));
    return b.Finish().bytes;
  };
  weight_step(900, 1);
  EXPECT_NE(weight_step(1000, 2), weight_step(1100, 1));  // another param
  const std::string before = weight_step(1200, 1);
  meta.meta[1] = "w f32[4,5]";  // the fixed handle's metadata moved
  EXPECT_NE(weight_step(1300, 1), before);
}

TEST(StepSignatureTest, AttributeOrderDoesNotMatter) {
  FakeMeta meta;
  StepSignatureBuilder b(&meta);
  v1::Command one = Call(3, {1}, {10});
  (*one.mutable_call()->mutable_attrs())["a"].set_i(1);
  (*one.mutable_call()->mutable_attrs())["b"].set_f(2.5);
  v1::Command two = Call(3, {1}, {20});
  (*two.mutable_call()->mutable_attrs())["b"].set_f(2.5);
  (*two.mutable_call()->mutable_attrs())["a"].set_i(1);
  b.Add(one);
  const std::string first = b.Finish().bytes;
  b.Add(two);
  EXPECT_EQ(b.Finish().bytes, first);
}

TEST(StepSignatureTest, RolesTellFreshPreviousAndFixedApart) {
  FakeMeta meta;
  StepSignatureBuilder b(&meta);
  b.Add(Call(1, {}, {10, 11}));
  b.Finish();
  // 10 is now "previous 0", 11 "previous 1"; reading 11 vs 10 differs.
  b.Add(Call(2, {11}, {20, 21}));
  const std::string reads_prev1 = b.Finish().bytes;
  b.Add(Call(2, {20}, {30, 31}));  // previous 0
  EXPECT_NE(b.Finish().bytes, reads_prev1);
  b.Add(Call(2, {31}, {40, 41}));  // previous 1 again
  EXPECT_EQ(b.Finish().bytes, reads_prev1);
}

TEST(StepSignatureTest, UncapturableCommandsAndCaps) {
  FakeMeta meta;
  StepSignatureBuilder b(&meta);
  v1::Command event;
  event.mutable_record_event()->set_event(5);
  b.Add(Call(1, {}, {10}));
  b.Add(event);
  EXPECT_FALSE(b.Finish().capturable);

  for (size_t i = 0; i < kMaxStepCommands + 10; ++i) {
    b.Add(Call(1, {}, {100 + i}));
  }
  StepSignature big = b.Finish();
  EXPECT_FALSE(big.capturable);
  EXPECT_EQ(big.commands, kMaxStepCommands + 10);
  EXPECT_LE(big.bytes.size(), kMaxStepSignatureBytes);
}

TEST(StepSignatureTest, FixedBindingsRecordStorage) {
  FakeMeta meta;
  int a = 0, c = 0;
  meta.storage[1] = &a;
  meta.storage[2] = &c;
  StepSignatureBuilder b(&meta);
  b.Add(Call(1, {1, 2, 1}, {10}));
  StepSignature s = b.Finish();
  ASSERT_EQ(s.fixed.size(), 2u);
  EXPECT_EQ(s.fixed[0], (FixedBinding{1, &a}));
  EXPECT_EQ(s.fixed[1], (FixedBinding{2, &c}));
}

}  // namespace
}  // namespace tensord
