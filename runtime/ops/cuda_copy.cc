// Device-generic copies for the dispatcher: converting strided copies on the
// tensor's own device, the session's stream per device (Note [Session
// streams] in runtime/device.h), and copies across devices for `to`.
// Without TENSORD_WITH_CUDA only the CPU paths exist.
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"

#if TENSORD_WITH_CUDA
#include "kernels/cuda/elementwise.h"
#endif

namespace tensord {

absl::StatusOr<OpContext> ContextFor(Device* device, const OpContext& ctx) {
  OpContext out = ctx;
  if (device->kind() == DeviceKind::kCpu) {
    out.alloc.stream = nullptr;
    return out;
  }
  TD_ASSIGN_OR_RETURN(out.alloc.stream,
                      device->SessionStream(ctx.alloc.session, ctx.stream_id));
  return out;
}

absl::Status CopyOnDevice(Device* device, const StridedView& src,
                          const StridedView& dst, StreamHandle stream) {
  if (device->kind() == DeviceKind::kCpu) return cpu::Copy(src, dst);
#if TENSORD_WITH_CUDA
  return cuda::Copy(src, dst, stream);
#else
  (void)stream;
  return absl::UnimplementedError(
      absl::StrCat("copies on ", device->name(), " need a CUDA build"));
#endif
}

absl::Status FillOnDevice(Device* device, const StridedView& dst, double value,
                          StreamHandle stream) {
  if (device->kind() == DeviceKind::kCpu) return cpu::Fill(dst, value);
#if TENSORD_WITH_CUDA
  return cuda::Fill(dst, value, stream);
#else
  (void)stream;
  return absl::UnimplementedError(
      absl::StrCat("fills on ", device->name(), " need a CUDA build"));
#endif
}

absl::StatusOr<Tensor> ToDevice(const Tensor& t, Device* device, DType dtype,
                                const OpContext& ctx) {
  Device* from = t.device();
  if (from == device) {
    TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(device, ctx));
    TD_ASSIGN_OR_RETURN(Tensor out,
                        Tensor::Empty(device, dtype, t.shape(), dctx.alloc));
    TD_RETURN_IF_ERROR(
        CopyOnDevice(device, t.view(), out.view(), dctx.alloc.stream));
    return out;
  }
  // Contiguous in the target dtype on the source device first (the
  // conversion runs where the data is), then one flat transfer.
  TD_ASSIGN_OR_RETURN(Tensor src, ToDevice(t, from, dtype, ctx));
  TD_ASSIGN_OR_RETURN(OpContext sctx, ContextFor(from, ctx));
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(device, ctx));
  TD_ASSIGN_OR_RETURN(Tensor out,
                      Tensor::Empty(device, dtype, t.shape(), dctx.alloc));
  const size_t bytes = out.nbytes();
  if (from->kind() == DeviceKind::kCpu) {
    TD_RETURN_IF_ERROR(
        device->CopyFromHost(out.data(), src.data(), bytes, dctx.alloc.stream));
  } else if (device->kind() == DeviceKind::kCpu) {
    // A value read: waits for the source stream up to the copy.
    TD_RETURN_IF_ERROR(
        from->CopyToHost(out.data(), src.data(), bytes, sctx.alloc.stream));
  } else {
    // GPU to GPU through host memory (peer copies are a later optimisation).
    if (ctx.devices == nullptr) {
      return absl::InternalError("copy between GPUs without a device registry");
    }
    TD_ASSIGN_OR_RETURN(Tensor host,
                        ToDevice(src, ctx.devices->cpu(), dtype, ctx));
    TD_RETURN_IF_ERROR(device->CopyFromHost(out.data(), host.data(), bytes,
                                            dctx.alloc.stream));
  }
  return out;
}

}  // namespace tensord
