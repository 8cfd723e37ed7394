// 2-d convolution through cuDNN (forward, backward data, backward filter)
// on contiguous NCHW float32/float64 tensors. Plain C++ header; the
// definitions exist only in CUDA builds.
//
// Workspace comes from the caller (the runtime's caching allocator) through
// `workspace`: called at most once per call with the bytes the chosen
// algorithm needs; the memory must stay valid until the work is enqueued
// (stream-ordered reuse makes freeing right after safe). Algorithms are
// picked by cuDNN's heuristics (the first one whose workspace can be had).
// float32 runs without TF32 (CUDNN_FMA_MATH) unless ConvShape::allow_tf32
// (the session's SetOptions.allow_tf32; then CUDNN_DEFAULT_MATH lets cuDNN
// pick tensor-op algorithms), as matmul does.
#ifndef TENSORD_KERNELS_CUDA_CONV_H_
#define TENSORD_KERNELS_CUDA_CONV_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cuda {

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t o, groups;   // weight [o, c / groups, kh, kw]
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh, ow;  // output
  // Math mode, not geometry: TF32 tensor cores allowed for float32.
  bool allow_tf32 = false;
};

using WorkspaceFn = std::function<absl::StatusOr<void*>(size_t bytes)>;

// y = conv(x, w) (+ bias [o] when `bias` is not null).
absl::Status Conv2dForward(const ConvShape& s, const StridedView& x,
                           const StridedView& w, const StridedView* bias,
                           const StridedView& y, const WorkspaceFn& workspace,
                           StreamHandle stream);
// dx (overwritten) from dy and w.
absl::Status Conv2dBackwardData(const ConvShape& s, const StridedView& dy,
                                const StridedView& w, const StridedView& dx,
                                const WorkspaceFn& workspace,
                                StreamHandle stream);
// dw (overwritten) from dy and x.
absl::Status Conv2dBackwardFilter(const ConvShape& s, const StridedView& dy,
                                  const StridedView& x, const StridedView& dw,
                                  const WorkspaceFn& workspace,
                                  StreamHandle stream);

}  // namespace cuda
}  // namespace tensord

#endif  // TENSORD_KERNELS_CUDA_CONV_H_
