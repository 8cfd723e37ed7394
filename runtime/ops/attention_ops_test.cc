// scaled_dot_product_flash_attention and its backward on the CPU: values
// worked out by hand (two keys with weights 1/4 and 3/4, the causal first
// query, a fully masked query), a broadcast key, sizes spanning several
// query and key blocks against a plain double softmax, the backward against
// central differences of the forward, and the composite row's grouped-query
// heads. The sweep against PyTorch: tests/python/test_nn_attention.py and
// tests/python_torch/test_attention.py.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/ops/cpu_op_test.h"

namespace tensord {
namespace {

using D = std::vector<double>;

class AttentionOpsTest : public CpuOpTest {
 protected:
  Tensor T64(const D& v, Shape shape) {
    return From(v, DType::kFloat64, shape);
  }
  static D Values(const Tensor& t) {
    const double* p = t.view().ptr<const double>();
    return D(p, p + t.numel());
  }
  D Random(int64_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> dist;
    D v(n);
    for (double& x : v) x = dist(gen);
    return v;
  }
  std::vector<Tensor> Forward(std::vector<Tensor> in, AttrMap attrs = {}) {
    auto out = Run("scaled_dot_product_flash_attention", std::move(in), attrs);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>{};
  }
};

// softmax(q k^T * scale) v of one problem in plain double, causal or not.
D Reference(const D& q, const D& k, const D& v, int64_t l, int64_t s, int64_t e,
            int64_t ev, double scale, bool causal) {
  D out(l * ev, 0.0);
  for (int64_t i = 0; i < l; ++i) {
    D w(s, -std::numeric_limits<double>::infinity());
    double mx = w[0];
    for (int64_t j = 0; j < s && (!causal || j <= i); ++j) {
      double dot = 0;
      for (int64_t c = 0; c < e; ++c) dot += q[i * e + c] * k[j * e + c];
      w[j] = dot * scale;
      mx = std::max(mx, w[j]);
    }
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    for (int64_t j = 0; j < s; ++j) {
      for (int64_t c = 0; c < ev; ++c) {
        out[i * ev + c] += w[j] / sum * v[j * ev + c];
      }
    }
  }
  return out;
}

TEST_F(AttentionOpsTest, TwoKeysByHand) {
  // Scores 0 and log 3 (scale 1): weights 1/4 and 3/4 of values 4 and 8.
  auto out = Forward(
      {T64({1}, {1, 1}), T64({0, std::log(3.0)}, {2, 1}), T64({4, 8}, {2, 1})},
      {{"scale", 1.0}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(Values(out[0])[0], 7.0, 1e-12);
  EXPECT_NEAR(Values(out[1])[0], std::log(4.0), 1e-12);
}

TEST_F(AttentionOpsTest, CausalFirstQuerySeesOnlyTheFirstKey) {
  // Top-left aligned: query 0 attends key 0 alone, query 1 both (equal
  // scores with q = 0: the mean of the values).
  auto out = Forward(
      {T64({0, 0}, {2, 1}), T64({1, 2, 3}, {3, 1}), T64({2, 6, 100}, {3, 1})},
      {{"is_causal", true}});
  EXPECT_EQ(Values(out[0]), (D{2, 4}));
  EXPECT_NEAR(Values(out[1])[1], std::log(2.0), 1e-12);
}

TEST_F(AttentionOpsTest, FullyMaskedQueryGivesZero) {
  Tensor mask = From(std::vector<uint8_t>{1, 0, 0, 0}, DType::kBool, {2, 2});
  auto out = Forward(
      {T64({1, 1}, {2, 1}), T64({1, 2}, {2, 1}), T64({3, 5}, {2, 1}), mask});
  EXPECT_EQ(Values(out[0]), (D{3, 0}));  // query 0: key 0 only; query 1: none
  EXPECT_EQ(Values(out[1])[1], 0.0);     // PyTorch's flash kernel's log-sum-exp
  // Its gradient is zero too, and the other query's comes through.
  auto d = Run("scaled_dot_product_flash_attention_backward",
               {T64({1, 1}, {2, 1}), T64({1, 1}, {2, 1}), T64({1, 2}, {2, 1}),
                T64({3, 5}, {2, 1}), out[0], out[1], mask});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(Values((*d)[0]), (D{0, 0}));  // one key: no dependence on q
  EXPECT_EQ(Values((*d)[2]), (D{1, 0}));  // dv: query 0's weight 1 on key 0
}

TEST_F(AttentionOpsTest, BlocksAgainstPlainSoftmax) {
  // 70 queries and 300 keys: two query blocks, two key blocks (one partial).
  const int64_t l = 70, s = 300, e = 5, ev = 3;
  for (bool causal : {false, true}) {
    D q = Random(l * e, 1), k = Random(s * e, 2), v = Random(s * ev, 3);
    auto out = Forward({T64(q, {l, e}), T64(k, {s, e}), T64(v, {s, ev})},
                       {{"is_causal", causal}});
    D want = Reference(q, k, v, l, s, e, ev, 1 / std::sqrt(5.0), causal);
    D got = Values(out[0]);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-12) << i << (causal ? " causal" : "");
    }
  }
}

TEST_F(AttentionOpsTest, BroadcastKeyAndFloatMask) {
  // Key and value shared by two query batches; a float mask [L, S] added.
  const int64_t l = 3, s = 4, e = 2;
  D q = Random(2 * l * e, 4), k = Random(s * e, 5), v = Random(s * e, 6);
  D m(l * s, 0.0);
  m[1] = -std::numeric_limits<double>::infinity();  // query 0, key 1 out
  auto out = Forward(
      {T64(q, {2, l, e}), T64(k, {1, s, e}), T64(v, {s, e}), T64(m, {l, s})});
  ASSERT_EQ(out[0].shape(), (Shape{2, l, e}));
  for (int b = 0; b < 2; ++b) {
    D qb(q.begin() + b * l * e, q.begin() + (b + 1) * l * e);
    auto one = Forward(
        {T64(qb, {l, e}), T64(k, {s, e}), T64(v, {s, e}), T64(m, {l, s})});
    D all = Values(out[0]), want = Values(one[0]);
    for (int64_t i = 0; i < l * e; ++i) EXPECT_EQ(all[b * l * e + i], want[i]);
  }
}

TEST_F(AttentionOpsTest, BackwardMatchesCentralDifferences) {
  const int64_t l = 5, s = 7, e = 3, ev = 2;
  D q = Random(l * e, 7), k = Random(s * e, 8), v = Random(s * ev, 9);
  D g = Random(l * ev, 10);
  for (bool causal : {false, true}) {
    AttrMap attrs = {{"is_causal", causal}, {"scale", 0.7}};
    auto loss = [&](const D& qq, const D& kk, const D& vv) {
      D o = Values(Forward({T64(qq, {l, e}), T64(kk, {s, e}), T64(vv, {s, ev})},
                           attrs)[0]);
      double sum = 0;
      for (size_t i = 0; i < o.size(); ++i) sum += o[i] * g[i];
      return sum;
    };
    auto fwd =
        Forward({T64(q, {l, e}), T64(k, {s, e}), T64(v, {s, ev})}, attrs);
    auto d = Run("scaled_dot_product_flash_attention_backward",
                 {T64(g, {l, ev}), T64(q, {l, e}), T64(k, {s, e}),
                  T64(v, {s, ev}), fwd[0], fwd[1]},
                 attrs);
    ASSERT_TRUE(d.ok()) << d.status();
    std::vector<D*> xs = {&q, &k, &v};
    for (int which = 0; which < 3; ++which) {
      D grad = Values((*d)[which]);
      D& x = *xs[which];
      for (size_t i = 0; i < x.size(); ++i) {
        const double h = 1e-6, keep = x[i];
        x[i] = keep + h;
        const double up = loss(q, k, v);
        x[i] = keep - h;
        const double down = loss(q, k, v);
        x[i] = keep;
        EXPECT_NEAR(grad[i], (up - down) / (2 * h), 1e-7)
            << "input " << which << " element " << i;
      }
    }
  }
}

TEST_F(AttentionOpsTest, GroupedQueryHeadsShareTheirKeyHead) {
  // Four query heads over two key heads: heads 0-1 use key head 0, 2-3 head
  // 1, as PyTorch's enable_gqa (repeat_interleave of the key's heads).
  const int64_t l = 3, s = 4, e = 2;
  D q = Random(4 * l * e, 11), k = Random(2 * s * e, 12),
    v = Random(2 * s * e, 13);
  auto out = Run("scaled_dot_product_attention",
                 {T64(q, {4, l, e}), T64(k, {2, s, e}), T64(v, {2, s, e})},
                 {{"enable_gqa", true}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), (Shape{4, l, e}));
  D got = Values((*out)[0]);
  for (int64_t h = 0; h < 4; ++h) {
    const int64_t kh = h / 2;
    D want = Reference(D(q.begin() + h * l * e, q.begin() + (h + 1) * l * e),
                       D(k.begin() + kh * s * e, k.begin() + (kh + 1) * s * e),
                       D(v.begin() + kh * s * e, v.begin() + (kh + 1) * s * e),
                       l, s, e, e, 1 / std::sqrt(2.0), false);
    for (int64_t i = 0; i < l * e; ++i) {
      EXPECT_NEAR(got[h * l * e + i], want[i], 1e-12) << h << " " << i;
    }
  }
}

TEST_F(AttentionOpsTest, Errors) {
  Tensor q = T64(D(6), {3, 2}), k = T64(D(8), {4, 2});
  auto r = Run("scaled_dot_product_attention", {q, k, T64(D(6), {3, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("next-to-last"),
            std::string::npos)
      << r.status();
  r = Run("scaled_dot_product_attention",
          {q, k, T64(D(8), {4, 2}), T64(D(12), {3, 4})}, {{"is_causal", true}});
  ASSERT_FALSE(r.ok());
  r = Run("scaled_dot_product_attention",
          {q, k, T64(D(8), {4, 2}), T64(D(6), {3, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("does not broadcast"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace tensord
