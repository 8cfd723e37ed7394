#!/usr/bin/env python3
"""Tiny-op throughput and the daemon's CPU per op with its metrics off and on (BENCHMARKS.md,
"Metrics on vs off").

Each round runs both arms back to back on fresh daemons, in alternating order (off-on, on-off,
...) so that a slow drift in the machine's load falls on both arms alike:
  off: tensord --insecure
  on:  the same with --metrics_listen, scraped every 0.5 s while the client works (twenty
       times Prometheus's usual rate), so a scrape's cost on the executors shows if it has one.
The client is tools/bench/tiny_ops_bench (dependent adds on a 1-element tensor; its figure is
the median of its reps). The daemon's CPU time is its own rusage (user + system), read by
os.wait4 when it exits: microsecond resolution, the whole process (executors, gRPC threads,
the exporter), less sensitive than throughput to other load on a shared machine. An idle
daemon's start and stop are measured per arm and subtracted, so that CPU per op is the work's.

Printed: every run, then per arm the median and the spread (min-max, and the interquartile
range) of ops/s and CPU ns per op, and the paired on/off ratios (one per round).

    bazel build //server:tensord //tools/bench:tiny_ops_bench
    /usr/bin/python3 tools/bench/metrics_overhead.py [--rounds 10] [--ops 200000] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from typing import Dict, List, Optional, Tuple

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DAEMON = os.environ.get("TENSORD_BINARY", os.path.join(ROOT, "bazel-bin", "server", "tensord"))
BENCH = os.environ.get("TINY_OPS_BENCH",
                       os.path.join(ROOT, "bazel-bin", "tools", "bench", "tiny_ops_bench"))
SYNC_ITERS = 20  # tiny_ops_bench's item() round trips: few, they are not what is measured


def read_port(path: str, proc: subprocess.Popen) -> int:
    """The port `proc` writes to `path` once it listens (start-up poll, 30 s at most)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tensord exited with {proc.returncode} before listening")
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return int(text)
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"tensord wrote no {path} within 30 s")


class Daemon:
    """A tensord on 127.0.0.1:0; `metrics`: with its exporter on and a 0.5 s scraper."""

    def __init__(self, tmp: str, metrics: bool) -> None:
        for name in ("port", "mport"):
            if os.path.exists(os.path.join(tmp, name)):
                os.remove(os.path.join(tmp, name))
        flags = [f"--port_file={tmp}/port", "--log_level=warn"]
        if metrics:
            flags += ["--metrics_listen=127.0.0.1:0", f"--metrics_port_file={tmp}/mport"]
        self.proc = subprocess.Popen([DAEMON, "--listen=127.0.0.1:0", "--insecure", *flags],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.address = f"127.0.0.1:{read_port(f'{tmp}/port', self.proc)}"
        self.stop_scraping = threading.Event()
        self.scrapes = 0
        self.scraper: Optional[threading.Thread] = None
        if metrics:
            url = f"http://127.0.0.1:{read_port(f'{tmp}/mport', self.proc)}/metrics"
            self.scraper = threading.Thread(target=self.scrape, args=(url,), daemon=True)
            self.scraper.start()

    def scrape(self, url: str) -> None:
        while not self.stop_scraping.is_set():
            with urllib.request.urlopen(url, timeout=10) as r:
                r.read()
            self.scrapes += 1
            self.stop_scraping.wait(0.5)

    def stop(self) -> float:
        """Stops the daemon (SIGTERM, a clean exit); returns its CPU seconds (user + sys)."""
        self.stop_scraping.set()
        if self.scraper is not None:
            self.scraper.join()
        self.proc.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.returncode != 0:
            raise RuntimeError(f"tensord exited with {self.proc.returncode} on SIGTERM")
        return usage.ru_utime + usage.ru_stime


def idle_cpu(tmp: str, metrics: bool, times: int = 3) -> float:
    """The median CPU seconds of a daemon started and stopped with no work (its start-up)."""
    return statistics.median(Daemon(tmp, metrics).stop() for _ in range(times))


def run(tmp: str, metrics: bool, ops: int, reps: int, idle_s: float) -> Tuple[float, float]:
    """One run on a fresh daemon: (tiny ops per second, the daemon's CPU ns per op)."""
    daemon = Daemon(tmp, metrics)
    try:
        out = subprocess.run([BENCH, f"--address={daemon.address}", f"--ops={ops}",
                              f"--reps={reps}", f"--sync_iters={SYNC_ITERS}", "--transfer=none"],
                             check=True, capture_output=True, text=True, timeout=600).stdout
    finally:
        cpu_s = daemon.stop()
    # tiny_ops_bench's work: a warm-up of ops/10 and `reps` runs of `ops` adds, then
    # (SYNC_ITERS/10 + SYNC_ITERS) one-op item() round trips.
    total_ops = ops // 10 + reps * ops + SYNC_ITERS // 10 + SYNC_ITERS
    return json.loads(out)["tiny_ops_per_s"], (cpu_s - idle_s) * 1e9 / total_ops


def spread(xs: List[float]) -> str:
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return (f"median {statistics.median(xs):,.0f}  min {min(xs):,.0f}  max {max(xs):,.0f}  "
            f"IQR {q[0]:,.0f}-{q[2]:,.0f}")


def ratio_spread(xs: List[float]) -> str:
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3
    return (f"median {statistics.median(xs):.3f}  min {min(xs):.3f}  max {max(xs):.3f}  "
            f"IQR {q[0]:.3f}-{q[2]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--ops", type=int, default=200000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    for path in (DAEMON, BENCH):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} is not built: bazel build //server:tensord "
                             "//tools/bench:tiny_ops_bench")
    tmp = tempfile.mkdtemp(prefix="tensord-metrics-overhead-")
    print(f"load average at start: {os.getloadavg()}")
    idle = {False: idle_cpu(tmp, False), True: idle_cpu(tmp, True)}
    print(f"idle daemon start+stop CPU: off {idle[False] * 1e3:.1f} ms, "
          f"on {idle[True] * 1e3:.1f} ms (subtracted)")
    rate: Dict[bool, List[float]] = {False: [], True: []}
    cpu: Dict[bool, List[float]] = {False: [], True: []}
    for r in range(args.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        for metrics in order:
            ops_s, ns_op = run(tmp, metrics, args.ops, args.reps, idle[metrics])
            rate[metrics].append(ops_s)
            cpu[metrics].append(ns_op)
        print(f"round {r + 1:2d} ({'off-on' if r % 2 == 0 else 'on-off'}): "
              f"off {rate[False][-1]:>9,.0f} ops/s {cpu[False][-1]:>6,.0f} ns/op   "
              f"on {rate[True][-1]:>9,.0f} ops/s {cpu[True][-1]:>6,.0f} ns/op", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    for metrics in (False, True):
        name = "on " if metrics else "off"
        print(f"{name} ops/s:          {spread(rate[metrics])}")
        print(f"{name} daemon CPU ns/op: {spread(cpu[metrics])}")
    print("paired on/off, ops/s:          "
          + ratio_spread([b / a for a, b in zip(rate[False], rate[True])]))
    print("paired on/off, daemon CPU/op:  "
          + ratio_spread([b / a for a, b in zip(cpu[False], cpu[True])]))


if __name__ == "__main__":
    main()
