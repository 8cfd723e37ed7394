// Automatic mixed precision on the daemon: a session's SetOptions.autocast
// names a low floating dtype (bfloat16 or float16), and from then on, in
// stream order, each op's floating inputs are cast by the op's policy before
// it runs (Note [Autocast]).
#ifndef TENSORD_RUNTIME_AUTOGRAD_AUTOCAST_H_
#define TENSORD_RUNTIME_AUTOGRAD_AUTOCAST_H_

#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "runtime/ops/op_def.h"

namespace tensord {

enum class AutocastPolicy : uint8_t {
  kAsCalled,  // inputs as they come
  kLow,       // matmuls, convolutions, linear, attention: the low dtype
  kFloat32,   // ops that lose too much in 16 bits: float32
  kPromote,   // ops mixing dtypes: the widest floating input dtype
};

// The policy of op-table row `op_id` (kAsCalled past the table's end).
AutocastPolicy AutocastPolicyOf(size_t op_id);

// Casts `*inputs` for an op of `policy` autocasting to `low`. Each cast is a
// `to` op run through ctx.recorder when set, so gradients flow back to the
// inputs' own dtypes (float32 parameters get float32 gradients). Only
// floating inputs other than float64 are cast, as PyTorch does on CUDA.
absl::Status AutocastInputs(AutocastPolicy policy, DType low,
                            absl::InlinedVector<Tensor, 4>* inputs,
                            const OpContext& ctx);

}  // namespace tensord

#endif  // TENSORD_RUNTIME_AUTOGRAD_AUTOCAST_H_
