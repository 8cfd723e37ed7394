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

}  // namespace
}  // namespace cpu
}  // namespace tensord
