// attention.h in float32 (vec_math_avx2.h's exp and max where the CPU has
// AVX2 + FMA, causal rows cut at their diagonal) against the same kernels in
// float64, forward and backward: causal or not, with a bool mask or none,
// l != s and several key blocks. runtime/ops/attention_ops_test.cc holds the
// float64 kernels to a plain softmax.
#include "kernels/cpu/attention.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace cpu {
namespace {

template <typename T>
struct Result {
  std::vector<T> out, lse, dq, dk, dv;
};

struct Inputs {
  std::vector<double> q, k, v, dy;
};

template <typename T>
Result<T> RunBoth(const AttentionGeometry& g, const Inputs& in) {
  const std::vector<T> q(in.q.begin(), in.q.end()), k(in.k.begin(), in.k.end()),
      v(in.v.begin(), in.v.end()), dy(in.dy.begin(), in.dy.end());
  Result<T> r{std::vector<T>(g.batch * g.l * g.ev),
              std::vector<T>(g.batch * g.l), std::vector<T>(q.size()),
              std::vector<T>(k.size()), std::vector<T>(v.size())};
  AttentionForward<T>(g, q.data(), k.data(), v.data(), r.out.data(),
                      r.lse.data());
  AttentionBackward<T>(g, dy.data(), q.data(), k.data(), v.data(), r.out.data(),
                       r.lse.data(), r.dq.data(), r.dk.data(), r.dv.data());
  return r;
}

void ExpectClose(const std::vector<float>& got, const std::vector<double>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-4 * (1 + std::fabs(want[i])))
        << what << " " << i;
  }
}

class AttentionFloat32Test
    : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(AttentionFloat32Test, MatchesFloat64) {
  const auto [causal, masked] = GetParam();
  const int64_t b = 3, l = 70, s = causal ? 70 : 600, e = 24, ev = 20;
  std::vector<int64_t> q_off(b), k_off(b), v_off(b), mask_off(b, 0);
  for (int64_t i = 0; i < b; ++i) {
    q_off[i] = i * l * e, k_off[i] = i * s * e, v_off[i] = i * s * ev;
  }
  std::mt19937 rng(1);
  std::normal_distribution<double> normal(0, 2);
  Inputs in{std::vector<double>(b * l * e), std::vector<double>(b * s * e),
            std::vector<double>(b * s * ev), std::vector<double>(b * l * ev)};
  for (auto* x : {&in.q, &in.k, &in.v, &in.dy}) {
    for (double& f : *x) f = normal(rng);
  }
  std::vector<uint8_t> mask(l * s);
  for (uint8_t& m : mask) m = rng() % 4 != 0;
  AttentionGeometry g;
  g.batch = b, g.l = l, g.s = s, g.e = e, g.ev = ev, g.scale = 0.3;
  g.causal = causal;
  g.q_off = q_off.data(), g.k_off = k_off.data(), g.v_off = v_off.data();
  if (masked) {
    g.mask = mask.data(), g.mask_is_bool = true, g.mask_off = mask_off.data();
    g.mask_row = s, g.mask_col = 1;
  }
  const Result<float> f = RunBoth<float>(g, in);
  const Result<double> d = RunBoth<double>(g, in);
  ExpectClose(f.out, d.out, "out");
  ExpectClose(f.lse, d.lse, "lse");
  ExpectClose(f.dq, d.dq, "dq");
  ExpectClose(f.dk, d.dk, "dk");
  ExpectClose(f.dv, d.dv, "dv");
}

INSTANTIATE_TEST_SUITE_P(CausalAndMask, AttentionFloat32Test,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

// Note [Attention geometry]: heads read in place from one [B, T, 3C]
// projection (q, k, v rows 3C apart) and a [B, T, C] output gradient give
// exactly the results of packed copies of the same heads.
TEST(AttentionTest, StridedRowsMatchPackedCopies) {
  const int64_t bs = 2, h = 3, t = 70, d = 16, c = h * d, nb = bs * h;
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> qkv(bs * t * 3 * c), gy(bs * t * c);
  for (float& x : qkv) x = normal(rng);
  for (float& x : gy) x = normal(rng);
  std::vector<int64_t> qo(nb), ko(nb), vo(nb), go(nb), po(nb);
  std::vector<float> qp(nb * t * d), kp(qp.size()), vp(qp.size()),
      gp(qp.size());
  for (int64_t b = 0; b < bs; ++b) {
    for (int64_t hh = 0; hh < h; ++hh) {
      const int64_t i = b * h + hh;
      qo[i] = b * t * 3 * c + hh * d, ko[i] = qo[i] + c, vo[i] = qo[i] + 2 * c;
      go[i] = b * t * c + hh * d, po[i] = i * t * d;
      for (int64_t r = 0; r < t; ++r) {
        for (int64_t e = 0; e < d; ++e) {
          qp[po[i] + r * d + e] = qkv[qo[i] + r * 3 * c + e];
          kp[po[i] + r * d + e] = qkv[ko[i] + r * 3 * c + e];
          vp[po[i] + r * d + e] = qkv[vo[i] + r * 3 * c + e];
          gp[po[i] + r * d + e] = gy[go[i] + r * c + e];
        }
      }
    }
  }
  for (bool causal : {false, true}) {
    AttentionGeometry packed;
    packed.batch = nb, packed.l = t, packed.s = t, packed.e = d,
    packed.ev = d, packed.scale = 0.25, packed.causal = causal;
    AttentionGeometry strided = packed;
    packed.q_off = po.data(), packed.k_off = po.data();
    packed.v_off = po.data();
    strided.q_off = qo.data(), strided.k_off = ko.data();
    strided.v_off = vo.data(), strided.dout_off = go.data();
    strided.q_row = strided.k_row = strided.v_row = 3 * c;
    strided.dout_row = c;
    const size_t n = qp.size();
    std::vector<float> o1(n), o2(n), l1(nb * t), l2(nb * t), dq1(n), dk1(n),
        dv1(n), dq2(n), dk2(n), dv2(n);
    AttentionForward<float>(strided, qkv.data(), qkv.data(), qkv.data(),
                            o1.data(), l1.data());
    AttentionForward<float>(packed, qp.data(), kp.data(), vp.data(), o2.data(),
                            l2.data());
    AttentionBackward<float>(strided, gy.data(), qkv.data(), qkv.data(),
                             qkv.data(), o1.data(), l1.data(), dq1.data(),
                             dk1.data(), dv1.data());
    AttentionBackward<float>(packed, gp.data(), qp.data(), kp.data(),
                             vp.data(), o2.data(), l2.data(), dq2.data(),
                             dk2.data(), dv2.data());
    EXPECT_EQ(o1, o2);
    EXPECT_EQ(l1, l2);
    EXPECT_EQ(dq1, dq2);
    EXPECT_EQ(dk1, dk2);
    EXPECT_EQ(dv1, dv2);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tensord
