#!/usr/bin/python3
"""CPU op benchmark: tensord kernel time vs local PyTorch, in one run on one machine.

Starts its own daemon (bazel-bin/server/tensord --listen=127.0.0.1:0 --insecure), uploads the
operands once, and times a loop of N ops closed by ``td.synchronize()`` (the daemon runs ops
in order, so the loop's wall time over N is the per-op kernel time plus a small per-op command
overhead). PyTorch runs the same loop in this process. Prints one line per op with the ratio
tensord / PyTorch (lower is better).

Usage: /usr/bin/python3 tools/bench/ops_bench.py [--threads N] [--repeat K]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import torch  # noqa: E402

import tensord as td  # noqa: E402


def start_daemon(threads: int) -> tuple:
    binary = os.environ.get("TENSORD_BINARY", os.path.join(REPO, "bazel-bin", "server", "tensord"))
    port_file = os.path.join(tempfile.mkdtemp(prefix="ops-bench-"), "port")
    env = dict(os.environ, TENSORD_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    proc = subprocess.Popen([binary, "--listen=127.0.0.1:0", "--insecure",
                             f"--port_file={port_file}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1500):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, "127.0.0.1:" + open(port_file).read().strip()
        time.sleep(0.02)
    proc.kill()
    raise SystemExit(f"{binary} did not start (build it with `bazel build //server:tensord`)")


def best_of(fn, n: int, repeat: int) -> float:
    """Seconds per call: the best of `repeat` loops of n calls."""
    fn()  # warm up (allocator caches, OpenBLAS buffers)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(n)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    proc, address = start_daemon(args.threads)
    try:
        td.connect(address)
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
        x, w = torch.randn(32, 64, 56, 56, generator=g), torch.randn(64, 64, 3, 3, generator=g)
        u, v = torch.randn(1 << 24, generator=g), torch.randn(1 << 24, generator=g)
        s = torch.randn(4096, 1024, generator=g)
        ta, tb, tx, tw, tu, tv, ts = (td.tensor(t.numpy()) for t in (a, b, x, w, u, v, s))
        F = torch.nn.functional
        conv = td.CatalogFunction("conv2d")
        softmax = td.CatalogFunction("softmax")
        cases = [
            ("matmul 1024x1024", 10, lambda: torch.matmul(a, b), lambda: td.matmul(ta, tb)),
            ("conv2d 32x64x56x56, 64->64, 3x3", 2, lambda: F.conv2d(x, w, padding=1),
             lambda: conv(tx, tw, padding=1)),
            ("add 16M float32", 10, lambda: torch.add(u, v), lambda: td.add(tu, tv)),
            ("sum 16M float32", 10, lambda: torch.sum(u), lambda: td.sum(tu)),
            ("softmax [4096, 1024] dim=-1", 10, lambda: torch.softmax(s, -1),
             lambda: softmax(ts, dim=-1)),
        ]
        print(f"tensord ops_bench: {args.threads} threads, best of {args.repeat}; "
              f"torch {torch.__version__}")
        print(f"{'op':36s} {'torch ms':>10s} {'tensord ms':>11s} {'ratio':>7s}")
        for name, n, torch_fn, td_fn in cases:
            def run_torch(k: int = 1) -> None:
                for _ in range(k):
                    torch_fn()

            def run_td(k: int = 1) -> None:
                outs = [td_fn() for _ in range(k)]
                td.synchronize()
                del outs

            t_torch = best_of(run_torch, n, args.repeat)
            t_td = best_of(run_td, n, args.repeat)
            print(f"{name:36s} {t_torch * 1e3:10.2f} {t_td * 1e3:11.2f} {t_td / t_torch:7.2f}")
        td.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
