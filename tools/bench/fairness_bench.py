#!/usr/bin/python3
"""Fairness: a small-op round trip while another session saturates the CPU.

One session (a subprocess) runs 1024x1024 matmuls back to back; another measures the round
trip of ``(x + 1).item()`` on a fresh 1-element tensor. Prints p50/p99 with and without the
heavy session, and their ratio. Each session has its own executor thread in the daemon, so
the interactive one waits only for CPU time, never behind the heavy one's queue.

Usage: /usr/bin/python3 tools/bench/fairness_bench.py [--samples N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))
sys.path.insert(0, os.path.dirname(__file__))

import tensord as td  # noqa: E402
from ops_bench import start_daemon  # noqa: E402

HEAVY = textwrap.dedent("""
    import sys, tensord as td
    td.connect(sys.argv[1])
    a = td.randn(1024, 1024)
    print("ready", flush=True)
    while True:
        for _ in range(8):
            a = (a @ a) * 1e-3           # keeps the daemon's CPU busy
        a.sum().item()
""")


def round_trips(samples: int) -> list:
    x = td.ones(1)
    out = []
    for _ in range(samples):
        t0 = time.perf_counter()
        (x + 1).item()
        out.append(time.perf_counter() - t0)
    out.sort()
    return out


def pct(values: list, q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    daemon, address = start_daemon(threads=os.cpu_count() or 1)
    try:
        td.connect(address)
        round_trips(200)  # warm-up
        idle = round_trips(args.samples)
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "client", "python"))
        heavy = subprocess.Popen([sys.executable, "-c", HEAVY, address],
                                 stdout=subprocess.PIPE, env=env, text=True)
        assert heavy.stdout.readline().strip() == "ready"
        loaded = round_trips(args.samples)
        heavy.kill()
        heavy.wait()
        print(f"{'small-op round trip':28s} {'p50 us':>10s} {'p99 us':>10s}")
        print(f"{'alone':28s} {pct(idle, .5):10.0f} {pct(idle, .99):10.0f}")
        print(f"{'beside a saturating session':28s} {pct(loaded, .5):10.0f} "
              f"{pct(loaded, .99):10.0f}")
        print(f"{'ratio (loaded / alone)':28s} {pct(loaded, .5) / pct(idle, .5):10.2f} "
              f"{pct(loaded, .99) / pct(idle, .99):10.2f}")
    finally:
        daemon.terminate()
        daemon.wait()


if __name__ == "__main__":
    main()
