#include "kernels/cpu/ctc_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/status_macros.h"

namespace tensord {
namespace cpu {
namespace {

// The geometry shared by both kernels: sizes, and where each batch entry's
// targets start.
struct Ctc {
  int64_t T, N, C, S;  // S: log_alpha's max_target_length
  const int64_t* il;
  const int64_t* tl;
  const int64_t* targets;
  std::vector<int64_t> start;  // batch entry b's targets: targets + start[b]
  int64_t blank;
  // The symbol of extended state s of entry b: blank at even s, else the
  // (s - 1) / 2-th target.
  int64_t Prime(int64_t b, int64_t s) const {
    return s % 2 == 0 ? blank : targets[start[b] + s / 2];
  }
};

absl::StatusOr<Ctc> Geometry(const StridedView& lp, const StridedView& targets,
                             const StridedView& il, const StridedView& tl,
                             int64_t alpha_width, int64_t blank) {
  Ctc g{lp.sizes[0],
        lp.sizes[1],
        lp.sizes[2],
        (alpha_width - 1) / 2,
        il.ptr<const int64_t>(),
        tl.ptr<const int64_t>(),
        targets.ptr<const int64_t>(),
        {},
        blank};
  const bool padded = targets.ndim == 2;
  int64_t pos = 0;
  for (int64_t b = 0; b < g.N; ++b) {
    if (g.il[b] < 0 || g.il[b] > g.T) {
      return absl::InvalidArgumentError(
          absl::StrCat("ctc_loss: expected input_lengths[", b, "] (", g.il[b],
                       ") to be in [0, ", g.T, "], the length of log_probs"));
    }
    const int64_t room = padded ? std::min(g.S, targets.sizes[1]) : g.S;
    if (g.tl[b] < 0 || g.tl[b] > room) {
      return absl::InvalidArgumentError(
          absl::StrCat("ctc_loss: expected target_lengths[", b, "] (", g.tl[b],
                       ") to be in [0, ", room, "]"));
    }
    g.start.push_back(padded ? b * targets.sizes[1] : pos);
    pos += g.tl[b];
  }
  if (!padded && pos > targets.sizes[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat("ctc_loss: target_lengths add up to ", pos,
                     " but there are only ", targets.sizes[0], " targets"));
  }
  for (int64_t b = 0; b < g.N; ++b) {
    for (int64_t i = 0; i < g.tl[b]; ++i) {
      const int64_t v = g.targets[g.start[b] + i];
      if (v < 0 || v >= g.C) {
        return absl::InvalidArgumentError(
            absl::StrCat("ctc_loss: target ", v, " of batch entry ", b,
                         " is not a class in [0, ", g.C, ")"));
      }
    }
  }
  return g;
}

template <typename T>
T LogSumExp3(T a, T b, T c) {
  T m = std::max(a, std::max(b, c));
  if (m == -std::numeric_limits<T>::infinity()) m = 0;
  return std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m)) + m;
}

template <typename T>
void Forward(const Ctc& g, const T* lp, T* nll, T* alpha) {
  const T ninf = -std::numeric_limits<T>::infinity();
  const int64_t W = 2 * g.S + 1;
  ParallelFor(g.N, g.T * W, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      T* la = alpha + b * g.T * W;  // [T, W]
      std::fill(la, la + g.T * W, ninf);
      const int64_t il = g.il[b], tl = g.tl[b], states = 2 * tl + 1;
      // log_probs[t][b][c]
      auto LP = [&](int64_t t, int64_t c) {
        return lp[(t * g.N + b) * g.C + c];
      };
      if (il == 0) {
        nll[b] = tl == 0 ? T(-0.0) : std::numeric_limits<T>::infinity();
        continue;
      }
      la[0] = LP(0, g.blank);
      if (tl > 0) la[1] = LP(0, g.Prime(b, 1));
      for (int64_t t = 1; t < il; ++t) {
        const T* prev = la + (t - 1) * W;
        T* cur = la + t * W;
        for (int64_t s = 0; s < states; ++s) {
          const int64_t sym = g.Prime(b, s);
          const T a2 = s > 0 ? prev[s - 1] : ninf;
          const T a3 = s > 1 && g.Prime(b, s - 2) != sym ? prev[s - 2] : ninf;
          cur[s] = LogSumExp3(prev[s], a2, a3) + LP(t, sym);
        }
      }
      const T* last = la + (il - 1) * W;
      if (tl == 0) {
        nll[b] = -last[0];
      } else {
        T l1 = last[2 * tl], l2 = last[2 * tl - 1];
        T m = std::max(l1, l2);
        if (m == ninf) m = 0;
        nll[b] = -(std::log(std::exp(l1 - m) + std::exp(l2 - m)) + m);
      }
    }
  });
}

template <typename T>
void Backward(const Ctc& g, const T* go, const T* lp, const T* nll,
              const T* alpha, bool zero_infinity, T* grad) {
  const T ninf = -std::numeric_limits<T>::infinity();
  const int64_t W = 2 * g.S + 1;
  ParallelFor(g.N, g.T * W, [&](int64_t lo, int64_t hi) {
    std::vector<T> beta(g.T * W);
    for (int64_t b = lo; b < hi; ++b) {
      const int64_t il = g.il[b], tl = g.tl[b], states = 2 * tl + 1;
      auto LP = [&](int64_t t, int64_t c) {
        return lp[(t * g.N + b) * g.C + c];
      };
      auto G = [&](int64_t t, int64_t c) -> T& {
        return grad[(t * g.N + b) * g.C + c];
      };
      for (int64_t t = 0; t < g.T; ++t) {
        for (int64_t c = 0; c < g.C; ++c) G(t, c) = t < il ? ninf : T(0);
      }
      if (il == 0 || (zero_infinity && nll[b] == -ninf)) {
        for (int64_t t = 0; t < il; ++t) {
          for (int64_t c = 0; c < g.C; ++c) G(t, c) = 0;
        }
        continue;
      }
      const T* la = alpha + b * g.T * W;
      std::fill(beta.begin(), beta.end(), ninf);
      T* lb = beta.data();
      // G(t, c) first holds log sum_{s: symbol c} alpha_t(s) beta_t(s).
      auto Add = [&](int64_t t, int64_t c, T v) {
        T& acc = G(t, c);
        if (acc == ninf) {
          acc = v;
        } else {
          const T m = std::max(acc, v);
          acc = std::log(std::exp(acc - m) + std::exp(v - m)) + m;
        }
      };
      const int64_t e = il - 1;
      lb[e * W + 2 * tl] = LP(e, g.blank);
      Add(e, g.blank, la[e * W + 2 * tl] + lb[e * W + 2 * tl]);
      if (tl > 0) {
        const int64_t sym = g.Prime(b, 2 * tl - 1);
        lb[e * W + 2 * tl - 1] = LP(e, sym);
        Add(e, sym, la[e * W + 2 * tl - 1] + lb[e * W + 2 * tl - 1]);
      }
      for (int64_t t = il - 2; t >= 0; --t) {
        const T* next = lb + (t + 1) * W;
        T* cur = lb + t * W;
        for (int64_t s = states - 1; s >= 0; --s) {
          const int64_t sym = g.Prime(b, s);
          const T b2 = s < 2 * tl ? next[s + 1] : ninf;
          const T b3 =
              s < 2 * tl - 1 && g.Prime(b, s + 2) != sym ? next[s + 2] : ninf;
          cur[s] = LogSumExp3(next[s], b2, b3) + LP(t, sym);
          Add(t, sym, la[t * W + s] + cur[s]);
        }
      }
      const T scale = go[b];
      for (int64_t t = 0; t < il; ++t) {
        for (int64_t c = 0; c < g.C; ++c) {
          T& r = G(t, c);
          const T l = LP(t, c);
          r = (std::exp(l) - std::exp(r + nll[b] - l)) * scale;
        }
      }
    }
  });
}

}  // namespace

absl::Status CtcLoss(const StridedView& log_probs, const StridedView& targets,
                     const StridedView& input_lengths,
                     const StridedView& target_lengths, int64_t blank,
                     const StridedView& neg_log_likelihood,
                     const StridedView& log_alpha) {
  TD_RETURN_IF_ERROR(RequireFloat(log_probs.dtype, "_ctc_loss"));
  TD_ASSIGN_OR_RETURN(
      Ctc g, Geometry(log_probs, targets, input_lengths, target_lengths,
                      log_alpha.sizes[2], blank));
  if (log_probs.dtype == DType::kFloat64) {
    Forward<double>(g, log_probs.ptr<const double>(),
                    neg_log_likelihood.ptr<double>(), log_alpha.ptr<double>());
  } else {
    Forward<float>(g, log_probs.ptr<const float>(),
                   neg_log_likelihood.ptr<float>(), log_alpha.ptr<float>());
  }
  return absl::OkStatus();
}

absl::Status CtcLossBackward(
    const StridedView& grad, const StridedView& log_probs,
    const StridedView& targets, const StridedView& input_lengths,
    const StridedView& target_lengths, const StridedView& neg_log_likelihood,
    const StridedView& log_alpha, int64_t blank, bool zero_infinity,
    const StridedView& grad_log_probs) {
  TD_RETURN_IF_ERROR(RequireFloat(log_probs.dtype, "_ctc_loss_backward"));
  TD_ASSIGN_OR_RETURN(
      Ctc g, Geometry(log_probs, targets, input_lengths, target_lengths,
                      log_alpha.sizes[2], blank));
  if (log_probs.dtype == DType::kFloat64) {
    Backward<double>(g, grad.ptr<const double>(), log_probs.ptr<const double>(),
                     neg_log_likelihood.ptr<const double>(),
                     log_alpha.ptr<const double>(), zero_infinity,
                     grad_log_probs.ptr<double>());
  } else {
    Backward<float>(g, grad.ptr<const float>(), log_probs.ptr<const float>(),
                    neg_log_likelihood.ptr<const float>(),
                    log_alpha.ptr<const float>(), zero_infinity,
                    grad_log_probs.ptr<float>());
  }
  return absl::OkStatus();
}

}  // namespace cpu
}  // namespace tensord
