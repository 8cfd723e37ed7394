// The op-table rows that run on the CPU only: compute rows (those with an
// `infer`) without a CUDA kernel. A new row without one must be listed here,
// which makes the gap visible in review; known_cpu_only_test checks the list
// against the table on every CUDA build, and tools/op_coverage_report.py
// parses it (the quoted names inside KnownCpuOnly()'s body) for docs/ops.md.
#ifndef TENSORD_RUNTIME_OPS_KNOWN_CPU_ONLY_H_
#define TENSORD_RUNTIME_OPS_KNOWN_CPU_ONLY_H_

#include <set>
#include <string>

namespace tensord {

// The names of the rows without a CUDA kernel. Never destroyed; thread-safe.
const std::set<std::string>& KnownCpuOnly();

}  // namespace tensord

#endif  // TENSORD_RUNTIME_OPS_KNOWN_CPU_ONLY_H_
