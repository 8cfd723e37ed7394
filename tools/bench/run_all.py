#!/usr/bin/python3
"""Runs every tensord benchmark next to local PyTorch in one run and prints one table of ratios.

Called by ``tools/bench/run_all.sh`` (which builds the binaries); see BENCHMARKS.md. Starts its
own daemon on 127.0.0.1:0, runs the C++ client bench (``tiny_ops_bench``), the Python client
and PyTorch benches (``py_bench.py``, each in its own process), the 4-client sharing run and
the allocator microbenchmark, then prints the table. Each figure is a median over repetitions
after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
# The interpreter of the tensord client benches: $TENSORD_PYTHON, else this one (run_all.sh runs
# Debian's /usr/bin/python3; run_gpu.sh a GPU box's python3).
PY = os.environ.get("TENSORD_PYTHON") or sys.executable
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# The reference: current PyTorch from PyPI, in the venv tools/install_deps.sh makes
# ($TENSORD_TORCH_PYTHON overrides). Debian's 1.13 (PY's torch) is only an optional second column
# (--debian_torch): it is several times slower than what a user installs today.
VENV_PY = os.path.join(REPO, ".venv-torch", "bin", "python")
TORCH_PY = os.environ.get("TENSORD_TORCH_PYTHON") or (VENV_PY if os.path.exists(VENV_PY) else PY)


def start_daemon(binary: str, threads: int, extra: List[str],
                 unix_socket: Optional[str] = None) -> Tuple[Any, str]:
    """A daemon on 127.0.0.1:0, or on ``unix:unix_socket`` when given."""
    port_file = os.path.join(tempfile.mkdtemp(prefix="tensord-bench-"), "port")
    env = dict(os.environ, TENSORD_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    listen = [f"--listen=unix:{unix_socket}"] if unix_socket else [
        "--listen=127.0.0.1:0", f"--port_file={port_file}"]
    proc = subprocess.Popen([binary, "--insecure", "--log_level=warn"] + listen + extra,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1500):
        if unix_socket and os.path.exists(unix_socket):
            return proc, "unix:" + unix_socket
        if not unix_socket and os.path.exists(port_file) and open(port_file).read().strip():
            return proc, "127.0.0.1:" + open(port_file).read().strip()
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    raise SystemExit(f"{binary} did not start")


def run_json(cmd: List[str], env: Optional[dict] = None) -> Dict[str, float]:
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, env=env, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def py(args: List[str], address: Optional[str], threads: int,
       interpreter: Optional[str] = None) -> Dict[str, float]:
    """py_bench.py under ``interpreter``: PY for tensord, TORCH_PY for ``--lib torch``."""
    if interpreter is None:
        interpreter = TORCH_PY if "torch" in args[args.index("--lib") + 1:][:1] else PY
    cmd = [interpreter, os.path.join(HERE, "py_bench.py"), "--threads", str(threads)] + args
    if address:
        cmd += ["--address", address]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    return run_json(cmd, env)


def sharing(address: str, clients: int, duration: float, threads: int) -> List[float]:
    """steps/s of each of ``clients`` concurrent MLP trainers on one daemon."""
    start_at = time.time() + 20.0  # time for every worker to connect, build and warm up
    cmd = [PY, os.path.join(HERE, "py_bench.py"), "--lib", "tensord", "--bench", "worker",
           "--address", address, "--start_at", str(start_at), "--duration", str(duration)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(clients)]
    rates = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit("a sharing worker failed")
        rates.append(json.loads(out.strip().splitlines()[-1])["steps_per_s"])
    return rates


def pingpong(binary: str, server: str) -> Dict[str, float]:
    """p50/p99 of a bare gRPC round trip on the Session stream (no tensord code), the client
    reading on a reader thread as tensord's does, against a ``server`` (callback|sync) server."""
    port_file = os.path.join(tempfile.mkdtemp(prefix="tensord-pingpong-"), "port")
    proc = subprocess.Popen([binary, f"--serve={server}", f"--port_file={port_file}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1500):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.02)
        port = open(port_file).read().strip()
        return run_json([binary, f"--address=127.0.0.1:{port}", "--client=reader"])
    finally:
        proc.kill()
        proc.wait()


def alloc(binary: str) -> Dict[str, float]:
    out = subprocess.run(
        [binary, "--benchmark_filter=BM_(CachedAllocFree/(512|4194304)/0|MallocFree/(512|4194304))$",
         "--benchmark_format=json", "--benchmark_repetitions=3",
         "--benchmark_report_aggregates_only=true"],
        check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            res[b["run_name"]] = b["cpu_time"]  # ns
    return res


# The training-step rows: py_bench.py --model and the row's name. GPT: the "tiny" config of
# examples/python/gpt_lm.py (py_bench.py's default) with AdamW; run_gpu.py runs GPT-2 small.
TRAIN_ROWS = (("mlp", "MLP 784-1024-1024-10 b256"), ("cnn", "CNN CIFAR-shaped b64"),
              ("resnet", "ResNet-style CIFAR b64"),
              ("gpt", "GPT tiny (4 layers, d=128, 64 tokens, vocab 512) b8, AdamW"))


class Table:
    """Rows against the reference PyTorch (TORCH_PY's); an optional last column against
    Debian's (--debian_torch), where a row has it."""

    def __init__(self, torch_version: str, debian_version: Optional[str]) -> None:
        self.rows: List[Tuple[str, ...]] = []
        self.torch_version = torch_version
        self.debian_version = debian_version

    def add(self, name: str, tensord: str, torch: str, ratio: Optional[float], aim: str,
            met: Optional[bool], debian: Optional[str] = None) -> None:
        row: Tuple[str, ...] = (name, tensord, torch, "-" if ratio is None else f"{ratio:.2f}x",
                                aim, "-" if met is None else ("yes" if met else "NO"))
        if self.debian_version:
            row += (debian or "-",)
        self.rows.append(row)

    def print(self) -> None:
        head: Tuple[str, ...] = ("benchmark", "tensord", f"PyTorch {self.torch_version}",
                                 "ratio", "aim", "met")
        if self.debian_version:
            head += (f"PyTorch {self.debian_version} (ratio)",)
        widths = [max(len(r[i]) for r in self.rows + [head]) for i in range(len(head))]
        line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa
        print(line(head))
        print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        for r in self.rows:
            print(line(r))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="bazel-bin of the -c opt build")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true", help="fewer ops/steps (smoke test)")
    ap.add_argument("--daemon_args", default="", help="extra tensord flags")
    ap.add_argument("--only", default="",
                    help="comma-separated subset of tiny,sync,transfer,train,sharing,alloc "
                         "(default: all); train_gpt: the GPT row alone (train has it too)")
    ap.add_argument("--debian_torch", action="store_true",
                    help="also time the training steps on Debian's PyTorch (1.13), a second "
                         "column")
    args = ap.parse_args()
    parts = set(args.only.split(",")) if args.only else {
        "tiny", "sync", "transfer", "train", "sharing", "alloc"}
    ops, reps, steps, dur, mib = ((10000, 3, 3, 3.0, 64) if args.quick
                                  else (100000, 5, 10, 10.0, 256))
    t = args.threads
    proc, address = start_daemon(os.path.join(args.bin, "server", "tensord"), t,
                                 args.daemon_args.split())
    table = Table(_torch_version(TORCH_PY),
                  _torch_version(PY) if args.debian_torch else None)
    try:
        res: Dict[str, Any] = {}
        log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731
        if parts & {"tiny", "transfer"}:  # the C++ bench times both
            log("tiny ops / sync / transfer: C++ client")
            res["cpp"] = run_json([os.path.join(args.bin, "tools", "bench", "tiny_ops_bench"),
                                   f"--address={address}", f"--ops={ops}", f"--reps={reps}",
                                   f"--transfer_mib={mib}"])
        common = ["--ops", str(ops), "--reps", str(reps)]
        if "tiny" in parts:
            log("tiny ops: Python client, PyTorch")
            res["py_tiny"] = py(["--lib", "tensord", "--bench", "tiny"] + common, address, t)
            res["th_tiny"] = py(["--lib", "torch", "--bench", "tiny"] + common, None, t)
            log("sync round trip")
            res["py_sync"] = py(["--lib", "tensord", "--bench", "sync"], address, t)
            res["th_sync"] = py(["--lib", "torch", "--bench", "sync"], None, t)
            pp = os.path.join(args.bin, "tools", "bench", "grpc_pingpong")
            res["pingpong"] = {kind: pingpong(pp, kind) for kind in ("callback", "sync")}
            log("tiny ops / sync over a unix socket (same host)")
            sock = os.path.join(tempfile.mkdtemp(prefix="tensord-bench-"), "tensord.sock")
            uproc, uaddr = start_daemon(os.path.join(args.bin, "server", "tensord"), t,
                                        args.daemon_args.split(), unix_socket=sock)
            try:
                res["cpp_unix"] = run_json([os.path.join(args.bin, "tools", "bench",
                                                         "tiny_ops_bench"), f"--address={uaddr}",
                                            f"--ops={ops}", f"--reps={reps}", "--transfer_mib=0"])
                res["py_tiny_unix"] = py(["--lib", "tensord", "--bench", "tiny"] + common, uaddr, t)
                res["py_sync_unix"] = py(["--lib", "tensord", "--bench", "sync"], uaddr, t)
            finally:
                uproc.terminate()
                uproc.wait(timeout=30)
        if "transfer" in parts:
            log("transfer: Python client, memcpy")
            xfer = ["--lib", "tensord", "--bench", "transfer", "--mib", str(mib), "--reps", "3"]
            res["py_xfer"] = py(xfer, address, t)  # shared memory (same host)
            res["py_xfer_stream"] = py(xfer + ["--shm", "off"], address, t)  # the bulk socket
            res["py_xfer_grpc"] = py(xfer + ["--shm", "off", "--bulk", "off"], address, t)
            res["memcpy"] = py(["--lib", "torch", "--bench", "transfer", "--mib", str(mib),
                                "--reps", "5"], None, t)
        models = (["mlp", "cnn", "resnet"] if "train" in parts else []) + (
            ["gpt"] if parts & {"train", "train_gpt"} else [])
        for model in models:
            log(f"training step: {model}")
            a = ["--bench", "train", "--model", model, "--steps", str(steps), "--reps", "3"]
            res[f"py_{model}"] = py(["--lib", "tensord"] + a, address, t)
            res[f"th_{model}"] = py(["--lib", "torch"] + a, None, t)
            if args.debian_torch:
                res[f"deb_{model}"] = py(["--lib", "torch"] + a, None, t, interpreter=PY)
        if "sharing" in parts:
            log("sharing: 1 client, then 4")
            res["share1"] = sharing(address, 1, dur, t)
            res["share4"] = sharing(address, 4, dur, t)
        if "alloc" in parts:
            log("allocator")
            res["alloc"] = alloc(os.path.join(args.bin, "tools", "bench", "alloc_bench"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    if "py_tiny" in res:
        th_ops = res["th_tiny"]["ops_per_s"]
        # TCP loopback rows first (as from another host), then the same clients over a unix
        # socket, the same-host transport (`--listen=unix:PATH`).
        for who, ops_s, aim in (("C++", res["cpp"]["tiny_ops_per_s"], 1.0),
                                ("Python", res["py_tiny"]["ops_per_s"], 1.0),
                                ("C++ unix socket", res["cpp_unix"]["tiny_ops_per_s"], 1.0),
                                ("Python unix socket", res["py_tiny_unix"]["ops_per_s"], 1.0)):
            r = ops_s / th_ops
            table.add(f"tiny ops, {who} client (ops/s)", f"{ops_s:,.0f}", f"{th_ops:,.0f}", r,
                      f">= {aim}x", r >= aim)
        th50 = res["th_sync"]["p50_us"]
        for who, p50, p99 in (("C++", res["cpp"]["sync_p50_us"], res["cpp"]["sync_p99_us"]),
                              ("Python", res["py_sync"]["p50_us"], res["py_sync"]["p99_us"]),
                              ("C++ unix socket", res["cpp_unix"]["sync_p50_us"],
                               res["cpp_unix"]["sync_p99_us"]),
                              ("Python unix socket", res["py_sync_unix"]["p50_us"],
                               res["py_sync_unix"]["p99_us"])):
            table.add(f"sync item(), {who} client p50 / p99", f"{p50:.0f} / {p99:.0f} us",
                      f"{th50:.1f} us", None, "p50 < 100 us", p50 < 100)
        for kind, what in (("callback", "callback API server, as tensord"),
                           ("sync", "synchronous API server")):
            # The transport's own floor under item() (no aim: a reference).
            pp = res["pingpong"][kind]
            table.add(f"bare gRPC round trip, {what}, p50 / p99", f"{pp['p50_us']:.0f} / "
                      f"{pp['p99_us']:.0f} us", "-", None, "-", None)
    if "memcpy" in res:
        mc = res["memcpy"]["memcpy_gbps"]
        cpp, pys, pyt = res["cpp"], res["py_xfer"], res["py_xfer_stream"]
        pyg = res["py_xfer_grpc"]
        # TCP loopback rows: no region, as from another host: the bytes on the bulk socket
        # (docs/protocol.md "Bulk socket"; "TCP gRPC only": on the stream itself); shm rows: the
        # same-host default for plain memory: the C++ client's by cross-memory attach when it works
        # (docs/protocol.md "Cross-memory attach": one copy, "shm (CMA)"), else and for Python the
        # shared-memory region (docs/protocol.md "Shared memory": two copies; the C++ "shm region"
        # row forces it); shared-buffer rows: from and into shared buffers (AllocateShared,
        # td.empty_shared: one copy, docs/protocol.md "Shared buffers").
        cpp_shm = "shm (CMA)" if cpp.get("cma") else "shm"

        def bulk(r: Dict[str, Any]) -> str:  # the bulk socket and its lanes, when it carried them
            n = r.get("bulk_lanes", 1)
            return f" (bulk socket, {n} lane{'s' if n != 1 else ''})" if r.get("bulk") else ""
        for who, path, aim, up, down in (
                ("C++", "TCP" + bulk(cpp), 0.3, cpp["upload_gbps"], cpp["download_gbps"]),
                ("C++", "TCP (bulk socket, 1 lane)", None, cpp.get("one_lane_upload_gbps", 0.0),
                 cpp.get("one_lane_download_gbps", 0.0)),
                ("C++", "TCP gRPC only", 0.3, cpp.get("grpc_upload_gbps", 0.0),
                 cpp.get("grpc_download_gbps", 0.0)),
                ("C++", cpp_shm, 0.7, cpp.get("shm_upload_gbps", 0.0),
                 cpp.get("shm_download_gbps", 0.0)),
                ("C++", "shm region", 0.7, cpp.get("region_upload_gbps", 0.0),
                 cpp.get("region_download_gbps", 0.0)),
                ("C++", "shared buffer", 0.7, cpp.get("shared_upload_gbps", 0.0),
                 cpp.get("shared_download_gbps", 0.0)),
                ("Python", "TCP" + bulk(pyt), 0.3, pyt["upload_gbps"], pyt["download_gbps"]),
                ("Python", "TCP gRPC only", 0.3, pyg["upload_gbps"], pyg["download_gbps"]),
                ("Python", "shm", 0.7, pys["upload_gbps"], pys["download_gbps"]),
                ("Python", "shared buffer", 0.7, pys.get("shared_upload_gbps", 0.0),
                 pys.get("shared_download_gbps", 0.0))):
            for kind, v in (("upload", up), ("download", down)):
                r = v / mc
                # aim None: a reference row (the bulk socket forced to one lane).
                table.add(f"{mib} MiB {kind}, {who} {path} (GB/s)", f"{v:.2f}",
                          f"{mc:.2f} (memcpy)", r, "-" if aim is None else f">= {aim}x",
                          None if aim is None else r >= aim)
        raw = res["memcpy"].get("raw_tcp_gbps")
        if raw:
            # The kernel's own ceiling for any TCP transport on this machine (no aim: a reference).
            table.add(f"{mib} MiB bare loopback TCP socket, one stream (GB/s)", f"{raw:.2f}",
                      f"{mc:.2f} (memcpy)", raw / mc, "-", None)
    for model, name in TRAIN_ROWS:
        if f"py_{model}" not in res:
            continue
        a, b = res[f"py_{model}"]["step_s"], res[f"th_{model}"]["step_s"]
        deb = res.get(f"deb_{model}")
        table.add(f"train step, {name}", f"{a * 1e3:.1f} ms", f"{b * 1e3:.1f} ms", a / b,
                  "<= 1.0x", a / b <= 1.0,
                  None if deb is None else f"{deb['step_s'] * 1e3:.1f} ms ({a / deb['step_s']:.2f}x)")
    if "share4" in res:
        one = res["share1"][0]
        four = res["share4"]
        agg = sum(four)
        mean = agg / len(four)
        spread = max(abs(r - mean) / mean for r in four)
        table.add("sharing, 4 MLP clients: aggregate vs 1 alone", f"{agg:.2f} steps/s",
                  f"{one:.2f} steps/s (1 client)", agg / one, ">= 0.9x", agg / one >= 0.9)
        table.add("sharing: each client's share", " ".join(f"{r:.2f}" for r in four),
                  f"mean {mean:.2f}", None, "within +-10%", spread <= 0.10)
    if "alloc" in res:
        al = res["alloc"]
        for size, label in ((512, "512 B"), (4194304, "4 MiB")):
            c = al.get(f"BM_CachedAllocFree/{size}/0")
            m = al.get(f"BM_MallocFree/{size}")
            if c is not None and m is not None:
                table.add(f"allocator: cached alloc+free {label}", f"{c:.0f} ns",
                          f"{m:.0f} ns (glibc malloc)", c / m, "< 100 ns", c < 100)
    print(f"\ntensord benchmarks vs local PyTorch {table.torch_version} ({TORCH_PY}) - "
          f"{time.strftime('%F %T')}"
          f", {os.cpu_count()} CPUs, {t} threads each, {ops} tiny ops, {mib} MiB transfers")
    table.print()
    print("\nraw:", json.dumps(res))


def _torch_version(interpreter: str) -> str:
    try:
        out = subprocess.run([interpreter, "-c", "import torch; print(torch.__version__)"],
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        return out.strip()
    except Exception:
        return "?"


if __name__ == "__main__":
    main()
