// The op table: every op tensord serves, in catalog order (the index is the
// op id on the wire). Built once from the per-family row lists below, which
// are plain functions returning vectors: greppable, no static registration.
#ifndef TENSORD_RUNTIME_OPS_OP_TABLE_H_
#define TENSORD_RUNTIME_OPS_OP_TABLE_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "runtime/ops/op_def.h"

namespace tensord {

// The whole table; built on first use, immutable afterwards (thread-safe).
const std::vector<OpDef>& OpTable();
// nullptr when there is no op of that name.
const OpDef* FindOp(absl::string_view name);

// The families (each in its own *_ops.cc).
std::vector<OpDef> CreationOps();
std::vector<OpDef> PointwiseOps();
std::vector<OpDef> ReductionOps();
std::vector<OpDef> LinalgOps();
std::vector<OpDef> ViewOps();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_OP_TABLE_H_
