// CUDA multinomial sampling (sort.h): cpu::Multinomial's loops, one thread
// per row (one per draw with replacement, after one thread per row has
// summed the row), in float64 and in the same order as the CPU, so the same
// uniforms pick the same categories. The weights are data: a check kernel
// records the first invalid row in the check words, and the sampling
// kernels then write nothing.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/sort.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cuda {
namespace {

// Check words: [0] = INT64_MAX, or the first invalid row * 4 + its problem
// (kCode*); [1] = that row's count of positive weights.
constexpr int kCodeBadValue = 1, kCodeZeroSum = 2, kCodeFewPositive = 3;

__global__ void ResetWords(int64_t* words) {
  words[0] = LLONG_MAX;
  words[1] = 0;
}

template <typename T>
__global__ void CheckRows(const T* p, int64_t rows, int64_t n, int64_t k,
                          bool replacement, int64_t* positive_of,
                          int64_t* words) {
  TD_GRID_STRIDE(r, rows) {
    double sum = 0;
    int64_t positive = 0;
    int code = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double w = static_cast<double>(p[r * n + j]);
      if (!(w >= 0) || isinf(w)) {
        code = kCodeBadValue;
        break;
      }
      sum += w;
      positive += w > 0;
    }
    if (code == 0 && sum <= 0) code = kCodeZeroSum;
    if (code == 0 && !replacement && positive < k) code = kCodeFewPositive;
    positive_of[r] = positive;
    if (code != 0) {
      atomicMin(reinterpret_cast<unsigned long long*>(words),
                static_cast<unsigned long long>(r * 4 + code));
    }
  }
}

__global__ void FinishCheck(const int64_t* positive_of, int64_t* words) {
  if (words[0] != LLONG_MAX) words[1] = positive_of[words[0] / 4];
}

// With replacement, step 1: cum[r, j] = w[r, 0] + ... + w[r, j] left to
// right (the CPU's running sums: adding a zero weight changes nothing) and
// the row's last positive category.
template <typename T>
__global__ void CumRows(const T* p, int64_t rows, int64_t n,
                        const int64_t* words, double* cum, int64_t* last) {
  if (words[0] != LLONG_MAX) return;
  TD_GRID_STRIDE(r, rows) {
    double run = 0;
    int64_t last_positive = -1;
    for (int64_t j = 0; j < n; ++j) {
      const double w = static_cast<double>(p[r * n + j]);
      if (w > 0) last_positive = j;
      run += w;
      cum[r * n + j] = run;
    }
    last[r] = last_positive;
  }
}

// Step 2, one thread per draw: the first category whose running sum passes
// u * total (its weight is then positive), else the last positive one.
__global__ void DrawWith(const double* cum, const int64_t* last,
                         const double* u, int64_t rows, int64_t n, int64_t k,
                         const int64_t* words, int64_t* out) {
  if (words[0] != LLONG_MAX) return;
  TD_GRID_STRIDE(e, rows * k) {
    const int64_t r = e / k;
    const double* c = cum + r * n;
    const double target = u[e] * c[n - 1];
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (c[mid] > target) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    out[e] = lo < n ? lo : last[r];
  }
}

// Without replacement: cpu::Multinomial's loop for the row, verbatim.
template <typename T>
__global__ void DrawWithout(const T* p, const double* u, int64_t rows,
                            int64_t n, int64_t k, const int64_t* words,
                            double* w, int64_t* out) {
  if (words[0] != LLONG_MAX) return;
  TD_GRID_STRIDE(r, rows) {
    double* wr = w + r * n;
    double total = 0;
    for (int64_t j = 0; j < n; ++j) {
      wr[j] = static_cast<double>(p[r * n + j]);
      total += wr[j];
    }
    for (int64_t s = 0; s < k; ++s) {
      const double target = u[r * k + s] * total;
      double run = 0;
      int64_t pick = -1;
      for (int64_t j = 0; j < n; ++j) {
        if (wr[j] <= 0) continue;
        pick = j;
        run += wr[j];
        if (run > target) break;
      }
      out[r * k + s] = pick;
      if (pick < 0) continue;  // the check rules this out
      total -= wr[pick];
      wr[pick] = 0;
    }
  }
}

// The check, then the draws (which do nothing after a failed check).
template <typename T>
void LaunchDraws(const T* p, const double* u, int64_t rows, int64_t n,
                 int64_t k, bool replacement, int64_t* words,
                 int64_t* positive_of, int64_t* last, double* w, int64_t* out,
                 cudaStream_t s) {
  CheckRows<T><<<BlocksFor(rows), kThreads, 0, s>>>(p, rows, n, k, replacement,
                                                    positive_of, words);
  FinishCheck<<<1, 1, 0, s>>>(positive_of, words);
  if (replacement) {
    CumRows<T><<<BlocksFor(rows), kThreads, 0, s>>>(p, rows, n, words, w, last);
    DrawWith<<<BlocksFor(rows * k), kThreads, 0, s>>>(w, last, u, rows, n, k,
                                                      words, out);
  } else {
    DrawWithout<T>
        <<<BlocksFor(rows), kThreads, 0, s>>>(p, u, rows, n, k, words, w, out);
  }
}

}  // namespace

absl::Status MultinomialStatus(const int64_t (&words)[kMultinomialWords],
                               int64_t num_samples) {
  if (words[0] == LLONG_MAX) return absl::OkStatus();
  switch (words[0] % 4) {
    case kCodeBadValue:
      return absl::InvalidArgumentError(
          "multinomial: probability tensor contains either inf, nan or "
          "element < 0");
    case kCodeZeroSum:
      return absl::InvalidArgumentError(
          "multinomial: invalid multinomial distribution (sum of "
          "probabilities <= 0)");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("multinomial: cannot draw ", num_samples,
                       " samples without replacement "
                       "from a row with only ",
                       words[1], " nonzero probabilities"));
  }
}

absl::Status Multinomial(const StridedView& probs, const StridedView& u,
                         bool replacement, const StridedView& out,
                         int64_t* check_words, const WorkspaceFn& workspace,
                         StreamHandle stream) {
  const int64_t rows = probs.ndim == 2 ? probs.sizes[0] : 1;
  const int64_t n = probs.sizes[probs.ndim - 1];
  const int64_t k = out.sizes[out.ndim - 1];
  auto s = static_cast<cudaStream_t>(stream);
  ResetWords<<<1, 1, 0, s>>>(check_words);
  TD_RETURN_IF_ERROR(LaunchStatus("multinomial kernel"));
  if (rows == 0) return absl::OkStatus();
  // Positive counts, last positive categories, then rows * n float64 (all
  // 8-byte elements: no padding needed).
  TD_ASSIGN_OR_RETURN(
      void* scratch,
      workspace(static_cast<size_t>(2 * rows + rows * n) * sizeof(int64_t)));
  int64_t* positive_of = static_cast<int64_t*>(scratch);
  int64_t* last = positive_of + rows;
  double* w = reinterpret_cast<double*>(last + rows);
  TD_CUDA_DISPATCH_FLOAT(
      probs.dtype,
      return absl::UnimplementedError(absl::StrCat(
          "multinomial on cuda: unsupported dtype ", DTypeName(probs.dtype))),
      LaunchDraws(probs.ptr<const scalar_t>(), u.ptr<const double>(), rows, n,
                  k, replacement, check_words, positive_of, last, w,
                  out.ptr<int64_t>(), s));
  return LaunchStatus("multinomial kernel");
}

}  // namespace cuda
}  // namespace tensord
