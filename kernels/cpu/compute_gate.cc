#include "kernels/cpu/compute_gate.h"

#include "runtime/core/mutex.h"

namespace tensord {
namespace cpu {
namespace {

// A ticket lock: each waiter takes the next ticket and enters when `serving`
// reaches it, so waiters enter in arrival order.
struct Gate {
  Mutex mu;
  uint64_t next_ticket ABSL_GUARDED_BY(mu) = 0;
  uint64_t serving ABSL_GUARDED_BY(mu) = 0;
};

Gate& GetGate() {
  static Gate* gate = new Gate();  // leaked: kernels may run at exit
  return *gate;
}

thread_local int gate_depth = 0;

}  // namespace

WideKernelScope::WideKernelScope(bool wide) {
  if (!wide) return;
  entered_ = true;
  if (gate_depth++ > 0) return;
  Gate& gate = GetGate();
  MutexLock lock(&gate.mu);
  const uint64_t ticket = gate.next_ticket++;
  auto my_turn = [&gate, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(gate.mu) {
    return gate.serving == ticket;
  };
  gate.mu.Await(absl::Condition(&my_turn));
}

WideKernelScope::~WideKernelScope() {
  if (!entered_ || --gate_depth > 0) return;
  Gate& gate = GetGate();
  MutexLock lock(&gate.mu);
  ++gate.serving;
}

void MarkGateWorker() { gate_depth = 1; }

}  // namespace cpu
}  // namespace tensord
