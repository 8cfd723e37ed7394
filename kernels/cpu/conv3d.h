// conv3d's forward and gradients on contiguous float32/float64 NCDHW data as
// direct loops: the path of float64 and of the float32 geometries oneDNN
// refuses (onednn_conv.h takes float32), and the reference the tests compare
// oneDNN's results against. Each output element sums its window in one
// order, so results depend on neither the pool size nor timing.
#ifndef TENSORD_KERNELS_CPU_CONV3D_H_
#define TENSORD_KERNELS_CPU_CONV3D_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/core/strided.h"

namespace tensord {
namespace cpu {

// Input [n, c, in[0], in[1], in[2]] (depth, height, width), weight
// [o, c/groups, k[0], k[1], k[2]], output (or grad) [n, o, out[0], out[1],
// out[2]]; dil is the dilation (1: dense), pad the zero padding each side.
struct ConvGeometry3d {
  int64_t n, c, o, groups;
  int64_t in[3], k[3], stride[3], pad[3], dil[3], out[3];
};

// out (overwritten; no bias) from input and weight.
absl::Status Conv3d(const StridedView& input, const StridedView& weight,
                    const ConvGeometry3d& g, const StridedView& out);
// The gradient of Conv3d's input from the output gradient and weight.
absl::Status Conv3dBackwardInput(const StridedView& grad,
                                 const StridedView& weight,
                                 const ConvGeometry3d& g,
                                 const StridedView& grad_input);
// The gradient of Conv3d's weight from the output gradient and input.
absl::Status Conv3dBackwardWeight(const StridedView& grad,
                                  const StridedView& input,
                                  const ConvGeometry3d& g,
                                  const StridedView& grad_weight);

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_CONV3D_H_
