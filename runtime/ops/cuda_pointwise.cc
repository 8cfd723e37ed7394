// CUDA wrappers for pointwise rows (only `add` so far; the CUDA issue adds
// the rest). Without TENSORD_WITH_CUDA they return nullptr: no CUDA kernel.
#include "runtime/ops/op_def.h"

#if TENSORD_WITH_CUDA
#include "absl/strings/str_cat.h"
#include "kernels/cuda/elementwise.h"
#include "runtime/ops/dispatch.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

absl::Status CudaAdd(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                     const Attrs& attrs, const OpContext& ctx) {
  if (out[0].dtype() != DType::kFloat32 || in[0].dtype() != DType::kFloat32 ||
      in[1].dtype() != DType::kFloat32) {
    return absl::UnimplementedError(absl::StrCat(
        "add on cuda supports float32 only so far, got ",
        DTypeName(in[0].dtype()), " and ", DTypeName(in[1].dtype())));
  }
  const Shape& shape = out[0].shape();
  return cuda::AddFloat32(in[0].BroadcastView(shape),
                          in[1].BroadcastView(shape),
                          static_cast<float>(attrs.Float("alpha")),
                          out[0].view(), ctx.alloc.stream);
}

}  // namespace

KernelFn CudaAddKernel() { return CudaAdd; }
#else
KernelFn CudaAddKernel() { return nullptr; }
#endif

}  // namespace tensord
