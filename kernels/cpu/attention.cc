#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/cpu/vec_math_avx2.h"

namespace tensord {
namespace cpu {
namespace {

// A block of 64 queries against 256 keys: 64 KiB of float scores, in L2
// with the query block and the running output.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 256;

inline float Exp(float x) { return internal::VecExp(x); }
inline double Exp(double x) { return std::exp(x); }

// Max of row[0, n), NaN if any is (internal::RowMax); float32 in AVX2.
template <typename T>
T RowMax(const T* row, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (internal::CpuHasAvx2Fma()) return internal::RowMaxAvx2(row, n);
  }
  return internal::RowMax(row, n);
}

// row[c] = exp(row[c] - m) for c < n (-inf entries: 0); returns their sum.
// float32 in AVX2 + FMA where the CPU has it (vec_math_avx2.h, Note [CPU
// softmax]): built without -mavx2 the compiler's loop ran 4 lanes at best.
// With RowMax's AVX2 twin, causal rows cut at their diagonal (LiveKeys) and
// OpenBLAS for these small products (Note [oneDNN GEMM]): GPT tiny's
// [8, 4, 64, 32] causal, 2-vCPU VM, 1 thread, forward 0.79 -> 0.32 ms,
// backward 1.00 -> 0.61 ms (PyTorch 2.15's sdpa: 0.34 ms, 1.12 ms forward +
// backward).
template <typename T>
T ExpShifted(T* row, int64_t n, T m) {
  if constexpr (std::is_same_v<T, float>) {
    if (internal::CpuHasAvx2Fma()) return internal::ExpShiftedSum(row, n, m);
  }
  for (int64_t c = 0; c < n; ++c) row[c] = Exp(row[c] - m);
  return static_cast<T>(internal::RowSum(row, n));
}

// C = op(A) op(B) + beta C, an empty product (k == 0) included.
template <typename T>
void Product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
             int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k > 0) {
    Gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  for (int64_t i = 0; i < m; ++i) {  // beta 0: C may hold garbage
    for (int64_t j = 0; j < n; ++j) {
      c[i * ldc + j] = beta == T(0) ? T(0) : c[i * ldc + j] * beta;
    }
  }
}

// Row strides (Note [Attention geometry]).
int64_t QRow(const AttentionGeometry& g) { return g.q_row > 0 ? g.q_row : g.e; }
int64_t KRow(const AttentionGeometry& g) { return g.k_row > 0 ? g.k_row : g.e; }
int64_t VRow(const AttentionGeometry& g) {
  return g.v_row > 0 ? g.v_row : g.ev;
}

// Keys [j0, end) that query block [i0, i1) may see at all: a causal block
// stops at the last query's diagonal.
int64_t KeyEnd(const AttentionGeometry& g, int64_t i1) {
  return g.causal ? std::min(g.s, i1) : g.s;
}

// Keys of [j0, j0 + jn) that query i may see before any mask: a causal
// query none past its diagonal (the rest of its row is -inf: weight 0).
int64_t LiveKeys(const AttentionGeometry& g, int64_t i, int64_t j0,
                 int64_t jn) {
  return g.causal ? std::clamp<int64_t>(i + 1 - j0, 0, jn) : jn;
}

// s[r, c] (raw Q K^T of rows [i0, i0 + rn) and keys [j0, j0 + jn)) turned
// into the masked, scaled scores; -inf where a query may not attend.
template <typename T>
void MaskScores(const AttentionGeometry& g, int64_t b, int64_t i0, int64_t rn,
                int64_t j0, int64_t jn, T* s, int64_t lds) {
  const T scale = static_cast<T>(g.scale);
  const T ninf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rn; ++r) {
    T* row = s + r * lds;
    const int64_t i = i0 + r;
    for (int64_t c = 0; c < jn; ++c) row[c] *= scale;
    if (g.mask != nullptr) {
      const int64_t base = g.mask_off[b] + i * g.mask_row + j0 * g.mask_col;
      if (g.mask_is_bool) {
        const auto* m = static_cast<const uint8_t*>(g.mask) + base;
        for (int64_t c = 0; c < jn; ++c) {
          if (m[c * g.mask_col] == 0) row[c] = ninf;
        }
      } else {
        const T* m = static_cast<const T*>(g.mask) + base;
        for (int64_t c = 0; c < jn; ++c) row[c] += m[c * g.mask_col];
      }
    }
    if (g.causal) {
      for (int64_t c = std::max<int64_t>(i + 1 - j0, 0); c < jn; ++c) {
        row[c] = ninf;
      }
    }
  }
}

// Queries [i0, i0 + rn) of problem b: out and lse by an online softmax over
// key blocks. `scratch` holds kQueryBlock * (kKeyBlock + ev + 2) values.
template <typename T>
void ForwardBlock(const AttentionGeometry& g, int64_t b, int64_t i0, int64_t rn,
                  const T* q, const T* k, const T* v, T* out, T* lse,
                  T* scratch) {
  const T ninf = -std::numeric_limits<T>::infinity();
  T* s = scratch;                        // [rn, kKeyBlock]
  T* acc = s + kQueryBlock * kKeyBlock;  // [rn, ev]
  T* mx = acc + kQueryBlock * g.ev;      // running max [rn]
  T* sum = mx + kQueryBlock;             // running sum [rn]
  std::fill(acc, acc + rn * g.ev, T(0));
  std::fill(mx, mx + rn, ninf);
  std::fill(sum, sum + rn, T(0));
  const int64_t qr = QRow(g), kr = KRow(g), vr = VRow(g);
  const T* qb = q + g.q_off[b] + i0 * qr;
  const int64_t end = KeyEnd(g, i0 + rn);
  for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
    const int64_t jn = std::min(kKeyBlock, end - j0);
    Product<T>(false, true, rn, jn, g.e, qb, qr, k + g.k_off[b] + j0 * kr, kr,
               T(0), s, kKeyBlock);
    MaskScores(g, b, i0, rn, j0, jn, s, kKeyBlock);
    for (int64_t r = 0; r < rn; ++r) {
      T* row = s + r * kKeyBlock;
      const int64_t live = LiveKeys(g, i0 + r, j0, jn);
      std::fill(row + live, row + jn, T(0));
      const T bm = RowMax(row, live);  // NaN wins
      const T m = (bm > mx[r] || bm != bm) ? bm : mx[r];
      if (m == ninf) {  // nothing to attend to yet: weights 0
        std::fill(row, row + live, T(0));
        continue;
      }
      const T total = ExpShifted(row, live, m);
      const T rescale = Exp(mx[r] - m);  // 0 while mx[r] is -inf
      sum[r] = sum[r] * rescale + total;
      mx[r] = m;
      if (rescale != T(1)) {
        T* a = acc + r * g.ev;
        for (int64_t c = 0; c < g.ev; ++c) a[c] *= rescale;
      }
    }
    Product<T>(false, false, rn, g.ev, jn, s, kKeyBlock,
               v + g.v_off[b] + j0 * vr, vr, T(1), acc, g.ev);
  }
  for (int64_t r = 0; r < rn; ++r) {
    const int64_t i = b * g.l + i0 + r;
    const T inv = sum[r] > 0 ? T(1) / sum[r] : T(0);
    const T* a = acc + r * g.ev;
    T* o = out + i * g.ev;
    for (int64_t c = 0; c < g.ev; ++c) o[c] = a[c] * inv;
    lse[i] = sum[r] > 0 ? mx[r] + std::log(sum[r]) : T(0);  // PyTorch's 0
  }
}

// Problem b's gradients. `scratch`: 2 * kQueryBlock * kKeyBlock + l values.
template <typename T>
void BackwardProblem(const AttentionGeometry& g, int64_t b, const T* dout,
                     const T* q, const T* k, const T* v, const T* out,
                     const T* lse, T* dq, T* dk, T* dv, T* scratch) {
  const T scale = static_cast<T>(g.scale);
  T* p = scratch;                           // [rn, kKeyBlock] weights
  T* dp = p + kQueryBlock * kKeyBlock;      // [rn, kKeyBlock] their gradient
  T* delta = dp + kQueryBlock * kKeyBlock;  // [l]: rowsum(dout * out)
  const int64_t qr = QRow(g), kr = KRow(g), vr = VRow(g);
  const int64_t gr = g.dout_row > 0 ? g.dout_row : g.ev;
  const T* go = dout + (g.dout_off != nullptr ? g.dout_off[b] : b * g.l * gr);
  const T* o = out + b * g.l * g.ev;
  for (int64_t i = 0; i < g.l; ++i) {
    T d = 0;
    for (int64_t c = 0; c < g.ev; ++c) d += go[i * gr + c] * o[i * g.ev + c];
    delta[i] = d;
  }
  T* dqb = dq + b * g.l * g.e;
  T* dkb = dk + b * g.s * g.e;
  T* dvb = dv + b * g.s * g.ev;
  std::fill(dqb, dqb + g.l * g.e, T(0));
  std::fill(dkb, dkb + g.s * g.e, T(0));
  std::fill(dvb, dvb + g.s * g.ev, T(0));
  const T* qb = q + g.q_off[b];
  const T* kb = k + g.k_off[b];
  const T* vb = v + g.v_off[b];
  const T* lb = lse + b * g.l;
  for (int64_t i0 = 0; i0 < g.l; i0 += kQueryBlock) {
    const int64_t rn = std::min(kQueryBlock, g.l - i0);
    const int64_t end = KeyEnd(g, i0 + rn);
    for (int64_t j0 = 0; j0 < end; j0 += kKeyBlock) {
      const int64_t jn = std::min(kKeyBlock, end - j0);
      Product<T>(false, true, rn, jn, g.e, qb + i0 * qr, qr, kb + j0 * kr, kr,
                 T(0), p, kKeyBlock);
      MaskScores(g, b, i0, rn, j0, jn, p, kKeyBlock);
      for (int64_t r = 0; r < rn; ++r) {
        T* row = p + r * kKeyBlock;
        const int64_t live = LiveKeys(g, i0 + r, j0, jn);
        ExpShifted(row, live, lb[i0 + r]);  // -inf (masked) entries give 0
        std::fill(row + live, row + jn, T(0));
      }
      // dv_j += P^T dout_i; dP = dout_i V_j^T.
      Product<T>(true, false, jn, g.ev, rn, p, kKeyBlock, go + i0 * gr, gr,
                 T(1), dvb + j0 * g.ev, g.ev);
      Product<T>(false, true, rn, jn, g.ev, go + i0 * gr, gr, vb + j0 * vr, vr,
                 T(0), dp, kKeyBlock);
      // dS = P * (dP - delta) * scale, in dp.
      for (int64_t r = 0; r < rn; ++r) {
        const T* pr = p + r * kKeyBlock;
        T* dr = dp + r * kKeyBlock;
        const T d = delta[i0 + r];
        for (int64_t c = 0; c < jn; ++c) dr[c] = pr[c] * (dr[c] - d) * scale;
      }
      // dq_i += dS K_j; dk_j += dS^T Q_i.
      Product<T>(false, false, rn, g.e, jn, dp, kKeyBlock, kb + j0 * kr, kr,
                 T(1), dqb + i0 * g.e, g.e);
      Product<T>(true, false, jn, g.e, rn, dp, kKeyBlock, qb + i0 * qr, qr,
                 T(1), dkb + j0 * g.e, g.e);
    }
  }
}

}  // namespace

template <typename T>
void AttentionForward(const AttentionGeometry& g, const T* q, const T* k,
                      const T* v, T* out, T* lse) {
  const int64_t blocks = (g.l + kQueryBlock - 1) / kQueryBlock;
  const int64_t per_slot = kQueryBlock * (kKeyBlock + g.ev + 2);
  std::vector<T> scratch(static_cast<size_t>(NumThreads() * per_slot));
  ParallelForSlots(
      g.batch * blocks, kQueryBlock * std::max<int64_t>(g.s, 1) * (g.e + g.ev),
      [&](int slot, int64_t first, int64_t last) {
        for (int64_t t = first; t < last; ++t) {
          const int64_t b = t / blocks, i0 = (t % blocks) * kQueryBlock;
          ForwardBlock(g, b, i0, std::min(kQueryBlock, g.l - i0), q, k, v, out,
                       lse, scratch.data() + slot * per_slot);
        }
      });
}

template <typename T>
void AttentionBackward(const AttentionGeometry& g, const T* grad_out,
                       const T* q, const T* k, const T* v, const T* out,
                       const T* lse, T* dq, T* dk, T* dv) {
  const int64_t per_slot = 2 * kQueryBlock * kKeyBlock + g.l;
  std::vector<T> scratch(static_cast<size_t>(NumThreads() * per_slot));
  ParallelForSlots(
      g.batch, std::max<int64_t>(g.l * g.s, 1) * (2 * g.e + 2 * g.ev),
      [&](int slot, int64_t first, int64_t last) {
        for (int64_t b = first; b < last; ++b) {
          BackwardProblem(g, b, grad_out, q, k, v, out, lse, dq, dk, dv,
                          scratch.data() + slot * per_slot);
        }
      });
}

template void AttentionForward<float>(const AttentionGeometry&, const float*,
                                      const float*, const float*, float*,
                                      float*);
template void AttentionForward<double>(const AttentionGeometry&, const double*,
                                       const double*, const double*, double*,
                                       double*);
template void AttentionBackward<float>(const AttentionGeometry&, const float*,
                                       const float*, const float*, const float*,
                                       const float*, const float*, float*,
                                       float*, float*);
template void AttentionBackward<double>(const AttentionGeometry&, const double*,
                                        const double*, const double*,
                                        const double*, const double*,
                                        const double*, double*, double*,
                                        double*);

}  // namespace cpu
}  // namespace tensord
