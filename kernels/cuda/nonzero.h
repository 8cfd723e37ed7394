// CUDA nonzero_static with the contract of kernels/cpu/nonzero.h: the
// coordinates of the first out.sizes[0] nonzero elements of a C-contiguous
// `in`, row-major, rows past the last one filled with `fill_value`. The
// count stays on the GPU (no host wait). Scratch memory comes from
// `workspace`, called once with the total (the caller keeps the memory until
// the work is enqueued, as for sort.h). Plain C++ header.
#ifndef TENSORD_KERNELS_CUDA_NONZERO_H_
#define TENSORD_KERNELS_CUDA_NONZERO_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

// The same type as sort.h's WorkspaceFn (a repeated alias is allowed).
using WorkspaceFn = std::function<absl::StatusOr<void*>(size_t bytes)>;

absl::Status NonzeroStatic(const StridedView& in, int64_t fill_value,
                           const StridedView& out, const WorkspaceFn& workspace,
                           StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_NONZERO_H_
