// torch.histogramdd's CPU arithmetic (ATen's HistogramKernel.cpp and
// Histogram.cpp) on float32/float64: the D-dimensional histogram of the rows
// of an [M, D] input, optionally weighted, optionally a density.
//
// - Outer edges (bin counts given): `range` (lo_0, hi_0, lo_1, ...) or each
//   column's min and max (NaN or inf there is an error, as PyTorch's); an
//   empty range widens by 0.5 each way; (0, 1) for an empty input.
// - Edges: PyTorch's linspace in the data's dtype, start + step * i for the
//   first half and end - step * (n - 1 - i) for the rest, each one fused
//   multiply-add (what PyTorch's compiled loop computes).
// - An element's bin along a dim: with counts, the linear estimate
//   (x - left) * bins / (right - left) corrected by an upper_bound over the
//   edges one bin either way; with edge tensors, an upper_bound over all of
//   them (unsorted edges give what std::upper_bound gives, as in PyTorch).
//   Rows with a value outside [left, right] in any dim (NaN too) count
//   nowhere; the last bin includes its right edge.
// - Weights (1 without) add up in row order; density divides by their total
//   and by each bin's width along every dim.
#ifndef TENSORD_KERNELS_CPU_HISTOGRAMDD_H_
#define TENSORD_KERNELS_CPU_HISTOGRAMDD_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// input [M, D] contiguous; range empty or 2 * D values. Fills lo and hi (D
// each) with the outer edges; INVALID_ARGUMENT for a range that is not
// finite or whose min exceeds its max.
absl::Status HistogramddOuterEdges(const StridedView& input,
                                   const std::vector<double>& range,
                                   std::vector<double>* lo,
                                   std::vector<double>* hi);

// edges (1-d contiguous, >= 2 elements): PyTorch's linspace from lo to hi.
absl::Status HistogramddLinspace(double lo, double hi,
                                 const StridedView& edges);

// input [M, D] and weight [M] (data null: none) contiguous, edges D 1-d
// contiguous views of input's dtype; hist (the edges' counts less one per
// dim, contiguous) is overwritten. linear: the edges are evenly spaced (the
// bin-count overloads), else binary search.
absl::Status Histogramdd(const StridedView& input, const StridedView& weight,
                         absl::Span<const StridedView> edges, bool linear,
                         bool density, const StridedView& hist);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_HISTOGRAMDD_H_
