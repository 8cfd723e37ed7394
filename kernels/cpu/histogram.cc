#include "kernels/cpu/histogram.h"

#include <vector>

#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/parallel.h"
#include "runtime/core/histogram_math.h"

namespace tensord {
namespace cpu {
namespace {

// What an element type computes in, and the rounding back to its precision
// (Note [Histc bins]).
template <typename T>
struct Arith {
  using C = T;
  static C Round(C v) { return v; }
};
template <>
struct Arith<Half> {
  using C = float;
  static C Round(C v) { return static_cast<float>(Half(v)); }
};
template <>
struct Arith<BFloat16> {
  using C = float;
  static C Round(C v) { return static_cast<float>(BFloat16(v)); }
};

// Counts per pool slot, summed in slot order: exact and deterministic.
template <typename T>
void Count(const StridedView& in, double lo, double hi,
           const StridedView& out) {
  using C = typename Arith<T>::C;
  const int64_t bins = out.sizes[0];
  const T* x = in.ptr<const T>();
  // The outer edges as PyTorch's linspace writes them: the range's ends
  // converted to T.
  const C left = static_cast<C>(static_cast<T>(static_cast<C>(lo)));
  const C right = static_cast<C>(static_cast<T>(static_cast<C>(hi)));
  auto round = [](C v) { return Arith<T>::Round(v); };
  std::vector<std::vector<int64_t>> counts(NumThreads());
  ParallelForSlots(in.numel(), 4, [&](int slot, int64_t begin, int64_t end) {
    std::vector<int64_t>& c = counts[slot];
    if (c.empty()) c.assign(bins, 0);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t pos =
          HistcBin(static_cast<C>(x[i]), left, right, bins, round);
      if (pos >= 0) ++c[pos];
    }
  });
  T* o = out.ptr<T>();
  for (int64_t b = 0; b < bins; ++b) {
    int64_t total = 0;
    for (const std::vector<int64_t>& c : counts) total += c.empty() ? 0 : c[b];
    o[b] = static_cast<T>(static_cast<C>(total));
  }
}

}  // namespace

absl::Status Histc(const StridedView& in, double lo, double hi,
                   const StridedView& out) {
  switch (in.dtype) {
    case DType::kFloat32:
      Count<float>(in, lo, hi, out);
      return absl::OkStatus();
    case DType::kFloat64:
      Count<double>(in, lo, hi, out);
      return absl::OkStatus();
    case DType::kFloat16:
      Count<Half>(in, lo, hi, out);
      return absl::OkStatus();
    case DType::kBFloat16:
      Count<BFloat16>(in, lo, hi, out);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("histc(): expected a floating-point input, got ",
                       DTypeName(in.dtype)));
  }
}

}  // namespace cpu
}  // namespace tensord
