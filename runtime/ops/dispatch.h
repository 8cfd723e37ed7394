// Runs one op-table row on tensors: arity and device checks, shape inference,
// output allocation, the device kernel. Thread-compatible: a session calls it
// from its executor thread only.
#ifndef TENSORD_RUNTIME_OPS_DISPATCH_H_
#define TENSORD_RUNTIME_OPS_DISPATCH_H_

#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/ops/op_def.h"

namespace tensord {

// Every error names the op and is a user error (INVALID_ARGUMENT,
// RESOURCE_EXHAUSTED, UNIMPLEMENTED, ...); no kernel runs unless the call
// validated (Note [Infer before compute]).
absl::StatusOr<std::vector<Tensor>> RunOp(const OpDef& op,
                                          absl::Span<const Tensor> inputs,
                                          const Attrs& attrs,
                                          const OpContext& ctx);

// INVALID_ARGUMENT naming `op` unless it takes `n` inputs (RunOp's first
// check; the daemon's inline dry run makes it too).
absl::Status CheckArity(const OpDef& op, size_t n);

// Shared helpers for the op families.
// `t` converted to `dtype` (no copy when it already has it).
absl::StatusOr<Tensor> CastTo(const Tensor& t, DType dtype,
                              const OpContext& ctx);
// The attributes of a call of `op` giving `given`: the row's prebuilt
// defaults when it gives none (no work per call), else `given` checked and
// completed into `*built` (Attrs::Build's errors).
absl::StatusOr<const Attrs*> CallAttrs(const OpDef& op,
                                       std::map<std::string, AttrValue> given,
                                       Attrs* built);
// `t` itself when it already has `dtype`, else a converted copy kept in
// `*converted` (saves a Tensor copy on the per-op path).
absl::StatusOr<const Tensor*> CastRef(const Tensor& t, DType dtype,
                                      const OpContext& ctx, Tensor* converted);
// A contiguous copy of `t` (no copy when already contiguous).
absl::StatusOr<Tensor> Contiguous(const Tensor& t, const OpContext& ctx);
// Contiguous() of each of `in`, in order (a fused kernel's operands).
absl::StatusOr<std::vector<Tensor>> ContiguousAll(absl::Span<const Tensor> in,
                                                  const OpContext& ctx);

// Device plumbing (cuda_copy.cc; Note [Session streams] in device.h).
// `ctx` with alloc.stream set to the session's stream on `device` (nullptr
// on the CPU); also makes a CUDA device current on this thread.
absl::StatusOr<OpContext> ContextFor(Device* device, const OpContext& ctx);
// dst = convert(src) for views of equal sizes on `device`, on `stream`.
absl::Status CopyOnDevice(Device* device, const StridedView& src,
                          const StridedView& dst, StreamHandle stream);
// Every element of `dst` on `device` = value (converted), on `stream`.
absl::Status FillOnDevice(Device* device, const StridedView& dst, double value,
                          StreamHandle stream);
// A new contiguous tensor on `device` with `dtype` holding `t`'s values
// (across devices too: `to(device=...)`). Reading back to the CPU waits for
// the source stream; uploads do not wait.
absl::StatusOr<Tensor> ToDevice(const Tensor& t, Device* device, DType dtype,
                                const OpContext& ctx);

// Note [Cross-stream inputs] (dispatch.cc): tells each input's allocator
// that its bytes are also used on `stream` when they were allocated for
// another (non-null) stream, so they are not reused before that stream's
// work is done. RunOp calls it for every kernel it launches.
absl::Status RecordCrossStreamUses(absl::Span<const Tensor> inputs,
                                   StreamHandle stream);

// Writes `src` (broadcast to dst's shape, converted to its dtype) into dst's
// memory on `ctx`'s stream for dst's device and bumps dst's storage version
// (in-place ops).
absl::Status CopyInto(const Tensor& dst, const Tensor& src,
                      const OpContext& ctx);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_DISPATCH_H_
