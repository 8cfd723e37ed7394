// CUDA kernels along one dim with the contracts of kernels/cpu/sort.h: sort
// (values and int64 indices, stable, NaN above every number), cumulative
// sums and products, cummax/cummin, logcumsumexp, mode from a sorted row,
// searchsorted, multinomial sampling. Every view is C-contiguous and
// seen as [outer, size, inner] around `dim` (0-d views count as [1]).
// Asynchronous on `stream`; scratch memory comes from `workspace` (called at
// most once per call, with the total; the caller keeps the memory until the
// work is enqueued, as for conv.h). Plain C++ header.
#ifndef TENSORD_KERNELS_CUDA_SORT_H_
#define TENSORD_KERNELS_CUDA_SORT_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// The same type as conv.h's WorkspaceFn (a repeated alias is allowed).
using WorkspaceFn = std::function<absl::StatusOr<void*>(size_t bytes)>;

// values/indices = in sorted along dim, stably; NaN sorts above every
// number and -0.0 ties with 0.0, as cpu::Sort. Every dtype of
// cpu::DispatchAll.
absl::Status Sort(const StridedView& in, int dim, bool descending,
                  const StridedView& values, const StridedView& indices,
                  const WorkspaceFn& workspace, StreamHandle stream);

// out = running sum (or product) of in along dim; in and out have one
// dtype. Integers wrap around as cpu::CumScan; bool sums are `or`, products
// `and`. Floats accumulate in their own type, in a block scan's order (not
// the CPU's left-to-right one: equal up to rounding).
absl::Status CumScan(const StridedView& in, int dim, bool product,
                     const StridedView& out, StreamHandle stream);

// cpu::CumExtreme's values and indices (cummax when max, else cummin), one
// thread per row. Every dtype of TD_CUDA_DISPATCH.
absl::Status CumExtreme(const StridedView& in, int dim, bool max,
                        const StridedView& values, const StridedView& indices,
                        StreamHandle stream);

// cpu::LogCumSumExp (accumulated in double), one thread per row; float32 and
// float64.
absl::Status LogCumSumExp(const StridedView& in, int dim,
                          const StridedView& out, StreamHandle stream);

// The mode of each row along dim from Sort's ascending (stable) output
// `sorted` and `positions` (the input's shape): values and indices have
// that shape with dim's size 1. scan::ModeOfSortedRow's rule: the smallest
// most frequent value at its last occurrence, which is cpu::Mode's (that
// is, PyTorch's CPU) index for rows of up to 16 elements (Note [Mode ties]
// in kernels/cpu/sort.cc).
absl::Status ModeOfSorted(const StridedView& sorted,
                          const StridedView& positions, int dim,
                          const StridedView& values, const StridedView& indices,
                          StreamHandle stream);

// cpu::SearchSorted, one thread per value.
absl::Status SearchSorted(const StridedView& boundaries,
                          const StridedView& values, bool right,
                          const StridedView& out, StreamHandle stream);

// Multinomial's check words (two device int64s): Multinomial writes the
// first invalid row's problem there, and the sampling kernels then write
// nothing. MultinomialStatus turns the words, read back to the host, into
// cpu::Multinomial's status (OK when every row is valid).
inline constexpr int kMultinomialWords = 2;
absl::Status MultinomialStatus(const int64_t (&words)[kMultinomialWords],
                               int64_t num_samples);

// out[r, s] = the category drawn for row r by uniform u[r, s] (float64) from
// the weights probs[r, :] (float32/float64, [rows, n] or [n]), with
// cpu::Multinomial's checks and rule: the same u give the same categories.
absl::Status Multinomial(const StridedView& probs, const StridedView& u,
                         bool replacement, const StridedView& out,
                         int64_t* check_words, const WorkspaceFn& workspace,
                         StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_SORT_H_
