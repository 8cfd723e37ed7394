#include "kernels/cpu/compute_gate.h"

#include <condition_variable>
#include <mutex>

namespace tensord {
namespace cpu {
namespace {

// std primitives, not absl::Mutex: a ticket lock needs FIFO hand-over, which
// the condition variable's notify_all plus the ticket check gives.
struct Gate {
  std::mutex mu;
  std::condition_variable turn;
  uint64_t next_ticket = 0;  // guarded by mu
  uint64_t serving = 0;      // guarded by mu
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
  std::unique_lock<std::mutex> lock(gate.mu);
  const uint64_t ticket = gate.next_ticket++;
  gate.turn.wait(lock, [&] { return gate.serving == ticket; });
}

WideKernelScope::~WideKernelScope() {
  if (!entered_ || --gate_depth > 0) return;
  Gate& gate = GetGate();
  {
    std::lock_guard<std::mutex> lock(gate.mu);
    ++gate.serving;
  }
  gate.turn.notify_all();
}

void MarkGateWorker() { gate_depth = 1; }

}  // namespace cpu
}  // namespace tensord
