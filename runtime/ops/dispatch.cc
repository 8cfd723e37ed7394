#include "runtime/ops/dispatch.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "runtime/core/status_macros.h"

namespace tensord {

absl::Status CheckArity(const OpDef& op, size_t n) {
  const int count = static_cast<int>(n);
  if (count < op.min_inputs || (op.max_inputs >= 0 && count > op.max_inputs)) {
    const std::string expected =
        op.max_inputs < 0 ? absl::StrCat("at least ", op.min_inputs)
        : op.min_inputs == op.max_inputs
            ? absl::StrCat(op.min_inputs)
            : absl::StrCat(op.min_inputs, " to ", op.max_inputs);
    return absl::InvalidArgumentError(
        absl::StrCat(op.name, " takes ", expected, " input(s), got ", count));
  }
  return absl::OkStatus();
}

namespace {

// Note [CPU scalars]: as in PyTorch, a 0-dim CPU tensor may be an input of
// an op on another device (torch.optim's state['step'] beside CUDA
// parameters). CheckSameDevice lets it through; composites get it where it
// is (adam_step reads its step counts on the host), and a kernel row gets a
// copy on the op's device (ScalarsToDevice), as its kernels read device
// memory only.
bool IsCpuScalar(const Tensor& t) {
  return t.ndim() == 0 && t.device()->kind() == DeviceKind::kCpu;
}

// The device the op runs on (its inputs' but for CPU scalars; null when
// every input is one, or there are none), or an error naming two devices.
// `*move_scalars`: CPU scalars that a kernel row must see on that device.
absl::StatusOr<Device*> CheckSameDevice(const OpDef& op,
                                        absl::Span<const Tensor> inputs,
                                        bool* move_scalars) {
  Device* device = nullptr;
  bool scalars = false;
  for (const Tensor& t : inputs) {
    if (IsCpuScalar(t)) {
      scalars = true;
    } else if (device == nullptr) {
      device = t.device();
    } else if (t.device() != device) {
      return absl::InvalidArgumentError(absl::StrCat(
          op.name, ": expected all tensors on the same device, found ",
          device->name(), " and ", t.device()->name(),
          " (move one with .to())"));
    }
  }
  *move_scalars =
      scalars && device != nullptr && device->kind() != DeviceKind::kCpu;
  return device;
}

// `inputs` with each CPU scalar copied to `device`, in `*moved` (Note [CPU
// scalars]).
absl::Status ScalarsToDevice(absl::Span<const Tensor> inputs, Device* device,
                             const OpContext& ctx, std::vector<Tensor>* moved) {
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(device, ctx));
  moved->assign(inputs.begin(), inputs.end());
  for (Tensor& t : *moved) {
    if (!IsCpuScalar(t)) continue;
    const bool wrapped = t.is_wrapped_number();
    TD_ASSIGN_OR_RETURN(t, ToDevice(t, device, t.dtype(), dctx));
    t.set_wrapped_number(wrapped);
  }
  return absl::OkStatus();
}

absl::Status PrefixOp(const OpDef& op, absl::Status status) {
  if (status.ok() || absl::StartsWith(status.message(), op.name)) return status;
  return absl::Status(status.code(),
                      absl::StrCat(op.name, ": ", status.message()));
}

bool IsHalf(DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; }

// Note [Half compute]: kernels compute in float32/float64 only (CUDA too:
// their half support is the converting copy). For a row
// without native_half, half inputs are converted to float32, half outputs are
// computed into float32 temporaries and converted back, so every op supports
// float16/bfloat16 with float32 accuracy in between (as PyTorch's CPU
// kernels accumulate in float). Rows with native_half_cuda skip the
// conversion on CUDA: matmul, mm, bmm (cuBLAS half GEMMs, Note [Half GEMM])
// and the elementwise rows whose kernels load and store half themselves,
// computing in float (Note [Native half kernels], kernels/cuda/
// elementwise.cu; the list is AddCudaNativeHalfRows in cuda_pointwise.cc).
absl::StatusOr<std::vector<Tensor>> RunKernelInFloat(
    const OpDef& op, KernelFn kernel, absl::Span<const Tensor> inputs,
    std::vector<Tensor> outputs, const Attrs& attrs, const OpContext& ctx) {
  std::vector<Tensor> in(inputs.begin(), inputs.end());
  for (Tensor& t : in) {
    if (IsHalf(t.dtype())) {
      TD_ASSIGN_OR_RETURN(t, CastTo(t, DType::kFloat32, ctx));
    }
  }
  std::vector<Tensor> tmp = outputs;
  for (Tensor& t : tmp) {
    if (IsHalf(t.dtype())) {
      TD_ASSIGN_OR_RETURN(
          t, Tensor::Empty(t.device(), DType::kFloat32, t.shape(), ctx.alloc));
    }
  }
  TD_RETURN_IF_ERROR(PrefixOp(op, kernel(in, tmp, attrs, ctx)));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (IsHalf(outputs[i].dtype())) {
      TD_RETURN_IF_ERROR(CopyOnDevice(outputs[i].device(), tmp[i].view(),
                                      outputs[i].view(), ctx.alloc.stream));
    }
  }
  return outputs;
}

// Adds the time since `*mark` to `*total` and moves the mark (Note [Op
// phases]); a no-op without phases.
void Lap(OpPhases* phases, uint64_t* mark, uint64_t OpPhases::*total) {
  if (phases == nullptr) return;
  const uint64_t now = PhaseClockNs();
  phases->*total += now - *mark;
  *mark = now;
}

uint64_t PhaseSum(const OpPhases& p) {
  return p.infer_ns + p.alloc_ns + p.kernel_ns;
}

// The kernel phase: while it lasts nested RunOps do not time (they are
// kernel time); at its end the time since `*mark` is added to kernel_ns
// (Note [Op phases]). A no-op without phases.
class KernelPhase {
 public:
  KernelPhase(OpPhases* phases, uint64_t* mark) : phases_(phases), mark_(mark) {
    if (phases_ != nullptr) ++phases_->depth;
  }
  ~KernelPhase() {
    if (phases_ == nullptr) return;
    --phases_->depth;
    Lap(phases_, mark_, &OpPhases::kernel_ns);
  }

 private:
  OpPhases* phases_;
  uint64_t* mark_;
};

}  // namespace

uint64_t PhaseClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::vector<Tensor>> RunOp(const OpDef& op,
                                          absl::Span<const Tensor> inputs,
                                          const Attrs& attrs,
                                          const OpContext& outer_ctx) {
  OpPhases* phases = outer_ctx.phases != nullptr && outer_ctx.phases->depth == 0
                         ? outer_ctx.phases
                         : nullptr;
  uint64_t mark = 0;
  if (phases != nullptr) {
    mark = PhaseClockNs();
    if (phases->first_run_ns == 0) phases->first_run_ns = mark;
  }
  TD_RETURN_IF_ERROR(CheckArity(op, inputs.size()));
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat(op.name, ": an input is an undefined tensor"));
    }
  }
  bool move_scalars = false;
  absl::StatusOr<Device*> op_device =
      CheckSameDevice(op, inputs, &move_scalars);
  if (!op_device.ok()) return op_device.status();
  if (op.view != nullptr || op.composite != nullptr) {
    const uint64_t inner = phases == nullptr ? 0 : PhaseSum(*phases);
    auto views = (op.view ? op.view : op.composite)(inputs, attrs, outer_ctx);
    if (phases != nullptr) {
      // Its own work (building a view, a fused loop such as sgd_step's)
      // counts as kernel time; the ops it ran timed themselves.
      const uint64_t elapsed = PhaseClockNs() - mark;
      const uint64_t nested = PhaseSum(*phases) - inner;
      if (elapsed > nested) phases->kernel_ns += elapsed - nested;
    }
    if (!views.ok()) return PrefixOp(op, views.status());
    return views;
  }
  std::vector<Tensor> moved;
  if (move_scalars) {
    TD_RETURN_IF_ERROR(
        PrefixOp(op, ScalarsToDevice(inputs, *op_device, outer_ctx, &moved)));
    inputs = moved;
  }
  auto specs = op.infer(inputs, attrs, outer_ctx);
  Lap(phases, &mark, &OpPhases::infer_ns);
  if (!specs.ok()) return PrefixOp(op, specs.status());
  Device* device = inputs.empty() ? specs->front().device : inputs[0].device();
  // Kernels and outputs use the session's stream on this device.
  auto dctx = ContextFor(device, outer_ctx);
  if (!dctx.ok()) return PrefixOp(op, dctx.status());
  const OpContext& ctx = *dctx;
  TD_RETURN_IF_ERROR(
      PrefixOp(op, RecordCrossStreamUses(inputs, ctx.alloc.stream)));
  const KernelFn kernel = device->kind() == DeviceKind::kCpu ? op.cpu : op.cuda;
  if (kernel == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        op.name, " is not implemented on ", device->name(), " yet"));
  }
  std::vector<Tensor> outputs;
  outputs.reserve(specs->size());
  for (const TensorSpec& spec : *specs) {
    auto out = Tensor::Empty(spec.device, spec.dtype, spec.shape, ctx.alloc);
    if (!out.ok()) return PrefixOp(op, out.status());
    outputs.push_back(*std::move(out));
  }
  Lap(phases, &mark, &OpPhases::alloc_ns);
  KernelPhase kernel_phase(phases, &mark);
  const bool native_half =
      op.native_half ||
      (op.native_half_cuda && device->kind() == DeviceKind::kCuda);
  if (!native_half) {
    bool half = false;
    for (const Tensor& t : inputs) half |= IsHalf(t.dtype());
    for (const Tensor& t : outputs) half |= IsHalf(t.dtype());
    if (half) {
      return RunKernelInFloat(op, kernel, inputs, std::move(outputs), attrs,
                              ctx);
    }
  }
  TD_RETURN_IF_ERROR(PrefixOp(op, kernel(inputs, outputs, attrs, ctx)));
  return outputs;
}

// Note [Cross-stream inputs]: the caching allocator reuses a freed block on
// the stream it was allocated for, which stream order makes safe. A tensor
// made on one stream of a session and read by a kernel on another (extra
// streams, Note [Session streams] in device.h) would break that: freed after
// the launch, its block could be handed out on its own stream and
// overwritten while the other stream still reads it. So before a kernel
// runs, every input whose storage belongs to a different stream is recorded
// on the kernel's stream (CachingAllocator::RecordStream, torch's
// record_stream): its free then waits for an event on that stream. Storage
// of the legacy stream (nullptr: in-place copies, CopyInto) needs nothing:
// session streams are blocking streams, ordered with it both ways. The
// check is a pointer compare per input; the allocator is only locked when
// streams really differ, and it ignores repeats.
absl::Status RecordCrossStreamUses(absl::Span<const Tensor> inputs,
                                   StreamHandle stream) {
  if (stream == nullptr) return absl::OkStatus();
  for (const Tensor& t : inputs) {
    const Storage& storage = *t.storage();
    if (storage.stream() == nullptr || storage.stream() == stream) continue;
    TD_RETURN_IF_ERROR(
        storage.device()->allocator()->RecordStream(storage.data(), stream));
  }
  return absl::OkStatus();
}

absl::Status CopyInto(const Tensor& dst, const Tensor& src,
                      const OpContext& ctx) {
  // The op's stream, as its kernels': the legacy default stream would order
  // the copy after every session's queued work (Note [Session streams]).
  TD_ASSIGN_OR_RETURN(OpContext dctx, ContextFor(dst.device(), ctx));
  const StreamHandle stream = dctx.alloc.stream;
  TD_RETURN_IF_ERROR(RecordCrossStreamUses({dst, src}, stream));
  TD_RETURN_IF_ERROR(CopyOnDevice(dst.device(), src.BroadcastView(dst.shape()),
                                  dst.view(), stream));
  dst.storage()->BumpVersion();
  return absl::OkStatus();
}

absl::StatusOr<Tensor> CastTo(const Tensor& t, DType dtype,
                              const OpContext& ctx) {
  if (t.dtype() == dtype) return t;
  TD_ASSIGN_OR_RETURN(Tensor out,
                      Tensor::Empty(t.device(), dtype, t.shape(), ctx.alloc));
  TD_RETURN_IF_ERROR(
      CopyOnDevice(t.device(), t.view(), out.view(), ctx.alloc.stream));
  return out;
}

absl::StatusOr<const Attrs*> CallAttrs(const OpDef& op,
                                       std::map<std::string, AttrValue> given,
                                       Attrs* built) {
  if (given.empty() && op.default_attrs != nullptr) {
    return op.default_attrs.get();
  }
  TD_ASSIGN_OR_RETURN(*built,
                      Attrs::Build(op.name, op.attrs, std::move(given)));
  return built;
}

absl::StatusOr<const Tensor*> CastRef(const Tensor& t, DType dtype,
                                      const OpContext& ctx, Tensor* converted) {
  if (t.dtype() == dtype) return &t;
  TD_ASSIGN_OR_RETURN(*converted, CastTo(t, dtype, ctx));
  return converted;
}

absl::StatusOr<Tensor> Contiguous(const Tensor& t, const OpContext& ctx) {
  if (t.is_contiguous()) return t;
  TD_ASSIGN_OR_RETURN(
      Tensor out, Tensor::Empty(t.device(), t.dtype(), t.shape(), ctx.alloc));
  TD_RETURN_IF_ERROR(
      CopyOnDevice(t.device(), t.view(), out.view(), ctx.alloc.stream));
  return out;
}

absl::StatusOr<std::vector<Tensor>> ContiguousAll(absl::Span<const Tensor> in,
                                                  const OpContext& ctx) {
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (const Tensor& t : in) {
    TD_ASSIGN_OR_RETURN(Tensor c, Contiguous(t, ctx));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace tensord
