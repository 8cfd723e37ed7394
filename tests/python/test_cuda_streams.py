"""Two sessions' CUDA streams overlap: one session's short work does not wait behind another's
long queue (DESIGN.md "Execution": each session has its own executor and stream).

GPU only: skips, saying why, without a CUDA device on this machine or on the daemon.

How it is shown without sleeps and without a timing threshold on the result: session A enqueues
a queue of large float32 matmuls sized (from a calibration) to take several seconds and hundreds
of times longer than one of B's round trips, and waits until the daemon has acknowledged them
(an Ack follows the launches, which are asynchronous on A's stream). A thread then waits in A's
``synchronize()``; meanwhile session B runs a few small GPU ops and ``item()``s. Every one of B's
results must arrive while A's thread is still waiting: had B's stream been serialised behind A's
queue, B's first ``item()`` could only return once A's queue had drained.
"""

from __future__ import annotations

import math
import statistics
import threading
import time

import numpy as np
import pytest

import tensord as td
from devices import cuda_visible

N = 8192  # A's matmul size (3 float32 operands of 256 MiB)
B_ROUNDS = 5


def _b_round(v: td.Tensor) -> float:
    """One of B's short jobs: a small matmul and a reduction on the GPU, then item()."""
    return td.matmul(v, v).sum().item()


def test_two_sessions_streams_overlap(daemon: str) -> None:
    ok, why = cuda_visible()
    if not ok:
        pytest.skip(f"no CUDA device on this machine ({why})")
    with td.connect(daemon) as a:
        if "cuda:0" not in a.devices:
            pytest.skip(f"no CUDA device on the daemon (devices: {', '.join(a.devices)})")
        x = td.randn(N, N, device="cuda:0")
        y = td.randn(N, N, device="cuda:0")
        td.matmul(x, y).sum().item()  # warm-up: cuBLAS handle, allocator segments
        t0 = time.perf_counter()
        for _ in range(3):
            c = td.matmul(x, y)
        a.synchronize()
        t_mm = (time.perf_counter() - t0) / 3
        with td.connect(daemon) as b:
            v = td.tensor(np.eye(256, dtype=np.float32), device="cuda:0")
            want = _b_round(v)
            lat = []
            for _ in range(5):
                t0 = time.perf_counter()
                _b_round(v)
                lat.append(time.perf_counter() - t0)
            t_b = statistics.median(lat)
            # A's queue: at least 2 s and 500 of B's idle round trips (sizing only, never
            # asserted), and 60 matmuls: each of B's kernels may wait for the matmul then
            # running to hand back its SMs, so B's rounds (3 kernels each) need well under
            # 3 * B_ROUNDS = 15 matmul times even on a GPU that runs one kernel at a time.
            k = max(60, min(2000, math.ceil(max(2.0, 500 * t_b) / t_mm)))
            for _ in range(k):
                c = td.matmul(x, y)
            assert tuple(c.shape) == (N, N)  # waits for A's Ack: every matmul is launched
            a_done = threading.Event()
            failure = []

            def wait_a() -> None:
                try:
                    a.synchronize()
                except Exception as e:  # reported by the main thread
                    failure.append(e)
                a_done.set()

            waiter = threading.Thread(target=wait_a, daemon=True)
            waiter.start()
            for i in range(B_ROUNDS):
                assert _b_round(v) == want
                assert not a_done.is_set(), (
                    f"session B's item() #{i + 1} returned only after session A's queue of {k} "
                    f"{N}x{N} matmuls (~{k * t_mm:.1f} s) had drained: the two sessions' streams "
                    "serialise")
            waiter.join(timeout=max(60.0, 20 * k * t_mm))
            assert a_done.is_set(), "session A's synchronize() did not return"
            assert not failure, f"session A's queue failed: {failure[0]}"
            assert np.isfinite(c.sum().item())
