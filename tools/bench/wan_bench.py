#!/usr/bin/python3
"""The training benchmarks, ``item()`` and 64 MiB transfers through a WAN-like link
(``wan_proxy.py``: fixed delay and rate per direction), the client treating the daemon as remote
(``--shm off``: no shared memory, every byte on the stream or the bulk socket).

    tools/bench/wan_bench.py [--models mlp,cnn,mlp:adam] [--rtts 10,50] [--mbits 100,1000]
                             [--steps 8] [--reps 3] [--no_transfer] [--no_item]

Starts its own daemon on 127.0.0.2 (gRPC on a free port, the bulk socket on another), and per
link two proxies on 127.0.0.1: one for the stream, one on the bulk port (the client connects its
bulk socket to the stream's host and the Welcome's port, so both go through a proxy). Each
benchmark is ``py_bench.py`` in its own process. Prints per row the step time, the direct
(loopback, no proxy, --shm off) step time, and round trips per step:
``(step - direct) / rtt``, and net of the batch's bytes on the line,
``(step - direct - batch_bytes / rate) / rtt``: what the design wants at most 1 for a step
that reads one value (DESIGN.md "The wire"). Needs ``bazel build //server:tensord``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from wan_proxy import Line, WanProxy  # noqa: E402

PY = os.environ.get("TENSORD_PYTHON") or sys.executable
DAEMON_HOST = "127.0.0.2"  # the proxies listen on 127.0.0.1 at the bulk socket's port


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def start_daemon(binary: str, threads: int, extra: List[str] = ()) -> tuple:
    port_file = os.path.join(tempfile.mkdtemp(prefix="tensord-wan-"), "port")
    bulk_port = free_port("127.0.0.1")
    env = dict(os.environ, TENSORD_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    proc = subprocess.Popen([binary, "--insecure", "--log_level=warn",
                             f"--listen={DAEMON_HOST}:0", f"--port_file={port_file}",
                             f"--bulk_port={bulk_port}", *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # process start-up only
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, f"{DAEMON_HOST}:{open(port_file).read().strip()}", bulk_port
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    raise SystemExit(f"{binary} did not start")


def py_bench(address: str, args: List[str], threads: int) -> Dict[str, Any]:
    cmd = [PY, os.path.join(HERE, "py_bench.py"), "--lib", "tensord", "--address", address,
           "--shm", "off", "--threads", str(threads)] + args
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), TENSORD_SHM="0")
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


class Link:
    """The two proxies of one link (stream and bulk socket), as a context manager."""

    def __init__(self, daemon: str, bulk_port: int, rtt: float, rate: Optional[float]) -> None:
        lines = (Line(rtt / 2, rate), Line(rtt / 2, rate))  # one path for both ports
        self.stream = WanProxy(daemon, lines=lines)
        self.bulk = WanProxy(f"{DAEMON_HOST}:{bulk_port}", lines=lines,
                             listen=f"127.0.0.1:{bulk_port}")

    def __enter__(self) -> "Link":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stream.close()
        self.bulk.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(REPO, "bazel-bin", "server", "tensord"))
    ap.add_argument("--models", default="mlp,cnn",
                    help="model[:optimizer], optimizer sgd (momentum 0.9, the default) or adam")
    ap.add_argument("--rtts", default="10,50", help="round trip times, ms")
    ap.add_argument("--mbits", default="100,1000", help="rates per direction, Mbit/s")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--item_iters", type=int, default=40)
    ap.add_argument("--transfer_mib", type=int, default=64)
    ap.add_argument("--no_transfer", action="store_true")
    ap.add_argument("--no_item", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--daemon_flag", action="append", default=[],
                    help="an extra flag for the daemon (repeatable)")
    args = ap.parse_args()
    rtts = [float(r) / 1e3 for r in args.rtts.split(",")]
    rates = [float(m) * 1e6 / 8 for m in args.mbits.split(",")]
    models = args.models.split(",")
    proc, daemon, bulk_port = start_daemon(args.binary, args.threads, args.daemon_flag)
    rows: List[Dict[str, Any]] = []
    try:
        train = ["--bench", "train", "--steps", str(args.steps), "--reps", str(args.reps)]
        def model(m: str) -> List[str]:
            kind, _, optim = m.partition(":")
            return ["--model", kind, "--optim", optim or "sgd"]

        direct = {m: py_bench(daemon, train + model(m), args.threads) for m in models}
        for m in models:
            print(f"{m:8} direct (loopback, --shm off): {direct[m]['step_s'] * 1e3:7.1f} ms/step",
                  flush=True)
        if not args.no_item:
            d = py_bench(daemon, ["--bench", "sync", "--iters", str(args.item_iters * 10)],
                         args.threads)
            print(f"item() direct: p50 {d['p50_us'] / 1e3:.2f} ms", flush=True)
        for rate in rates:
            for rtt in rtts:
                link = f"rtt {rtt * 1e3:3.0f} ms {rate * 8 / 1e6:5.0f} Mbit/s"
                with Link(daemon, bulk_port, rtt, rate) as p:
                    for m in models:
                        r = py_bench(p.stream.address, train + model(m), args.threads)
                        step, base = r["step_s"], direct[m]["step_s"]
                        wire = r.get("batch_bytes", 0) / rate
                        row = {"model": m, "rtt_ms": rtt * 1e3, "mbit": rate * 8 / 1e6,
                               "step_ms": step * 1e3, "direct_ms": base * 1e3,
                               "rt_per_step": (step - base) / rtt,
                               "rt_net_of_bytes": (step - base - wire) / rtt,
                               "waits_per_step": r.get("waits_per_step")}
                        rows.append(row)
                        print(f"{m:8} {link}: {step * 1e3:7.1f} ms/step (direct "
                              f"{base * 1e3:.1f}), {row['rt_per_step']:.2f} round trips/step, "
                              f"{row['rt_net_of_bytes']:.2f} net of the batch's "
                              f"{r.get('batch_bytes', 0) / 1e6:.2f} MB ({wire * 1e3:.0f} ms); "
                              f"client waits/step {row['waits_per_step']}", flush=True)
                    if not args.no_item:
                        r = py_bench(p.stream.address,
                                     ["--bench", "sync", "--iters", str(args.item_iters)],
                                     args.threads)
                        rows.append({"bench": "item", "rtt_ms": rtt * 1e3,
                                     "mbit": rate * 8 / 1e6, **r})
                        print(f"item() {link}: p50 {r['p50_us'] / 1e3:.1f} ms "
                              f"({r['p50_us'] / 1e6 / rtt:.2f} round trips)", flush=True)
                    if not args.no_transfer:
                        r = py_bench(p.stream.address,
                                     ["--bench", "transfer", "--mib", str(args.transfer_mib),
                                      "--reps", "1"], args.threads)
                        rows.append({"bench": "transfer", "rtt_ms": rtt * 1e3,
                                     "mbit": rate * 8 / 1e6, **r})
                        line = rate / 1e9
                        print(f"{args.transfer_mib} MiB {link}: upload "
                              f"{r['upload_gbps']:.3f} GB/s, download {r['download_gbps']:.3f} "
                              f"GB/s (the line: {line:.3f} GB/s; bulk socket: {r['bulk']})",
                              flush=True)
    finally:
        proc.terminate()
        proc.wait()
    # Round trips per step from the slope between the shortest and the longest RTT at each
    # rate: independent of the direct run, which a loaded machine makes noisy.
    if len(rtts) > 1:
        lo, hi = min(rtts), max(rtts)
        for m in models:
            for rate in rates:
                by = {r["rtt_ms"]: r["step_ms"] for r in rows if r.get("model") == m
                      and r["mbit"] == rate * 8 / 1e6}
                slope = (by[hi * 1e3] - by[lo * 1e3]) / ((hi - lo) * 1e3)
                print(f"{m:8} {rate * 8 / 1e6:5.0f} Mbit/s: {slope:.2f} round trips/step "
                      f"(slope from rtt {lo * 1e3:g} to {hi * 1e3:g} ms)", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
