// Note [CPU compute gate]: every session has its own executor thread, but a
// CPU kernel that fans out (a ParallelFor over the intra-op pool, which is
// also how a wide GEMM runs: Note [GEMM threads] in gemm.h) already uses every
// core. Two of them at once only oversubscribe the cores: when GEMMs still ran
// on OpenBLAS's own threads those spin-yielded against the pool's, and four
// training sessions together got ~0.77x of the throughput of one.
// So a wide kernel holds the process-wide gate while it runs. The gate is a
// ticket lock: waiters enter in arrival order, so sessions alternate fairly.
// It is re-entrant on one thread (a ParallelFor body that calls a GEMM), and
// the pool's workers count as inside it (they only ever run work for the
// thread that holds it). Narrow kernels never touch it.
#ifndef TENSORD_KERNELS_CPU_COMPUTE_GATE_H_
#define TENSORD_KERNELS_CPU_COMPUTE_GATE_H_

#include <cstdint>

namespace tensord {
namespace cpu {

// Holds the gate for its lifetime (waiting for its turn) when `wide`;
// otherwise does nothing.
class WideKernelScope {
 public:
  explicit WideKernelScope(bool wide = true);
  ~WideKernelScope();
  WideKernelScope(const WideKernelScope&) = delete;
  WideKernelScope& operator=(const WideKernelScope&) = delete;

 private:
  bool entered_ = false;
};

// Marks the calling thread as inside the gate for good (pool workers).
void MarkGateWorker();

// m*n*k from which a GEMM is split over the pool (gemm.h).
inline constexpr int64_t kWideGemmFlops = int64_t{1} << 18;

}  // namespace cpu
}  // namespace tensord

#endif  // TENSORD_KERNELS_CPU_COMPUTE_GATE_H_
