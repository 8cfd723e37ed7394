// as_strided against hand-computed views, and its bounds (Note [as_strided
// bounds]): no geometry a client sends reaches outside the input's storage.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using I = std::vector<int64_t>;

class AsStridedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = DeviceRegistry::Create();
    ctx_.device = devices_->cpu();
    ctx_.devices = devices_.get();
    ctx_.alloc.session = 1;
  }
  Tensor Iota(int64_t n) {
    Tensor t =
        *Tensor::Empty(devices_->cpu(), DType::kFloat32, {n}, ctx_.alloc);
    for (int64_t i = 0; i < n; ++i) t.view().ptr<float>()[i] = float(i);
    return t;
  }
  absl::StatusOr<Tensor> Run(const Tensor& t,
                             std::map<std::string, AttrValue> attrs) {
    const OpDef* op = FindOp("as_strided");
    auto built = Attrs::Build("as_strided", op->attrs, std::move(attrs));
    if (!built.ok()) return built.status();
    auto r = RunOp(*op, {t}, *built, ctx_);
    if (!r.ok()) return r.status();
    return (*r)[0];
  }
  // Row-major values of a 2-d view.
  static std::vector<float> Values(const Tensor& t) {
    std::vector<float> out;
    const float* base = static_cast<const float*>(t.storage()->data());
    for (int64_t i = 0; i < t.shape()[0]; ++i)
      for (int64_t j = 0; j < t.shape()[1]; ++j)
        out.push_back(
            base[t.offset() + i * t.strides()[0] + j * t.strides()[1]]);
    return out;
  }
  std::unique_ptr<DeviceRegistry> devices_;
  OpContext ctx_;
};

TEST_F(AsStridedTest, ViewsTheStorage) {
  Tensor x = Iota(12);
  auto diag = Run(x, {{"size", I{3, 1}}, {"stride", I{5, 1}}});
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_EQ(diag->storage(), x.storage());
  EXPECT_EQ(Values(*diag), (std::vector<float>{0, 5, 10}));
  auto windows = Run(
      x,
      {{"size", I{3, 4}}, {"stride", I{2, 1}}, {"storage_offset", int64_t{3}}});
  ASSERT_TRUE(windows.ok()) << windows.status();
  EXPECT_EQ(Values(*windows),
            (std::vector<float>{3, 4, 5, 6, 5, 6, 7, 8, 7, 8, 9, 10}));
  // The offset is absolute; input_offset makes it relative to where the
  // caller counts the input to start (the PyTorch device's wrappers).
  Tensor tail = x.AsStrided({8}, {1}, 4);
  auto abs = Run(
      tail,
      {{"size", I{1, 2}}, {"stride", I{1, 1}}, {"storage_offset", int64_t{1}}});
  ASSERT_TRUE(abs.ok()) << abs.status();
  EXPECT_EQ(Values(*abs), (std::vector<float>{1, 2}));
  auto rel = Run(tail, {{"size", I{1, 2}},
                        {"stride", I{1, 1}},
                        {"storage_offset", int64_t{1}},
                        {"input_offset", int64_t{0}}});
  ASSERT_TRUE(rel.ok()) << rel.status();
  EXPECT_EQ(Values(*rel), (std::vector<float>{5, 6}));
  auto own = Run(tail, {{"size", I{1, 1}}, {"stride", I{1, 1}}});
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(Values(*own), (std::vector<float>{4}));
}

TEST_F(AsStridedTest, RefusesEveryGeometryOutsideTheStorage) {
  // A 4-element view of a 12-element storage may reach all 12, no more.
  Tensor view = Iota(12).AsStrided({4}, {1}, 2);
  EXPECT_TRUE(
      Run(view,
          {{"size", I{12}}, {"stride", I{1}}, {"storage_offset", int64_t{0}}})
          .ok());
  const std::vector<std::map<std::string, AttrValue>> bad = {
      {{"size", I{13}}, {"stride", I{1}}, {"storage_offset", int64_t{0}}},
      {{"size", I{2}}, {"stride", I{11}}, {"storage_offset", int64_t{1}}},
      {{"size", I{1}}, {"stride", I{1}}, {"storage_offset", int64_t{12}}},
      {{"size", I{1}}, {"stride", I{1}}, {"storage_offset", int64_t{-1}}},
      {{"size", I{2}}, {"stride", I{-1}}, {"storage_offset", int64_t{5}}},
      {{"size", I{-2}}, {"stride", I{1}}},
      {{"size", I{2, 2}}, {"stride", I{1}}},
      {{"size", I{3, 3}}, {"stride", I{int64_t{1} << 62, int64_t{1} << 62}}},
      {{"size", I{0}}, {"stride", I{1}}, {"storage_offset", int64_t{13}}},
      {{"size", I{1}},
       {"stride", I{1}},
       {"storage_offset", int64_t{10}},
       {"input_offset", int64_t{0}}},  // 10 past the view's start: 12
  };
  for (const auto& attrs : bad) {
    auto r = Run(view, attrs);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("as_strided"), std::string::npos)
        << r.status();
  }
  auto r = Run(view, bad[0]);
  EXPECT_EQ(r.status().message(),
            "as_strided: sizes [13], strides [1] and storage offset 0 reach "
            "element 12 of a storage of 12 elements (float32, input [4] at "
            "offset 2)");
}

}  // namespace
}  // namespace tensord
