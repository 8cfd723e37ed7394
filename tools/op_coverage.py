"""PyTorch's OpInfo database on the tensord PyTorch device: per-entry status and docs/ops.md.

Run from the repository root with the project's venv, after ``bazel build //server:tensord``::

    PYTHONPATH=client/python .venv-torch/bin/python tools/op_coverage.py \
        [--write] [--update-list] [--progress] [NAME ...]

Starts a daemon, runs every OpInfo entry (or the NAMEs given) through
``tests/python_torch/opinfo_harness.py`` and prints one line per entry: passes / fails forward /
fails grad / falls back (to the CPU: an op the device does not map) / not compared / kills the
client. Entries run in worker processes, so one that aborts the client (a crash in PyTorch or the
device) is reported and the rest go on. ``--write`` regenerates docs/ops.md (the daemon's ops
with their CPU and CUDA kernels, and the OpInfo table); ``--update-list`` rewrites
tests/python_torch/opinfo_passing.txt, the entries the conformance suite
(tests/python_torch/test_opinfo.py) holds to passing: review its diff, since an entry that drops
out of it is a regression unless the commit says why. About 2 minutes on a 2-core VM.
Needs ``expecttest`` in the venv (torch.testing._internal imports it).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python_torch"))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
os.environ.setdefault("TENSORD_TORCH_CHECK", "1")

import opinfo_harness as H  # noqa: E402

DAEMON = os.path.join(ROOT, "bazel-bin", "server", "tensord")
PASSING = os.path.join(ROOT, "tests", "python_torch", "opinfo_passing.txt")
DOC = os.path.join(ROOT, "docs", "ops.md")
CPU_ONLY_SRC = os.path.join(ROOT, "runtime", "ops", "cuda_op_table_test.cc")


class Daemon:
    """The daemon on a free loopback port for the length of a ``with`` block."""

    def __init__(self, path: str = DAEMON) -> None:
        self.path = path

    def __enter__(self) -> str:
        tmp = tempfile.mkdtemp(prefix="tensord-coverage-")
        port_file = os.path.join(tmp, "port")
        self.log = open(os.path.join(tmp, "daemon.log"), "wb")
        self.proc = subprocess.Popen([self.path, "--listen=127.0.0.1:0", "--insecure",
                                      f"--port_file={port_file}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30  # process start-up only
        while time.monotonic() < deadline and self.proc.poll() is None:
            if os.path.exists(port_file) and open(port_file).read().strip():
                return "127.0.0.1:" + open(port_file).read().strip()
            time.sleep(0.02)
        self.proc.kill()
        raise SystemExit(f"the daemon ({self.path}) did not start: see {self.log.name}")

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.log.close()


def cpu_only_rows() -> List[str]:
    """KnownCpuOnly() of cuda_op_table_test.cc: the compute rows without a CUDA kernel."""
    text = open(CPU_ONLY_SRC).read()
    body = re.search(r"KnownCpuOnly\(\)\s*\{(.*?)return", text, re.S).group(1)
    return re.findall(r'"([a-z0-9_]+)"', body)


def catalog_table(catalog: Dict[str, object]) -> List[str]:
    cpu_only = set(cpu_only_rows())
    lines = ["| daemon op | CPU | CUDA | differentiable |", "|---|---|---|---|"]
    for name in sorted(catalog):
        op = catalog[name]
        lines.append(f"| `{name}` | yes | {'no' if name in cpu_only else 'yes'} | "
                     f"{'yes' if getattr(op, 'differentiable', False) else ''} |")
    return lines


def opinfo_table(results: List[H.Result]) -> List[str]:
    lines = ["| OpInfo entry | status | forward samples | gradient checks | note |",
             "|---|---|---|---|---|"]
    for r in results:
        fwd = f"{r.forward_ok}/{r.samples}" if r.samples else ""
        grd = f"{r.grad_ok}/{r.grad_checked}" if r.grad_checked else ""
        note = ("CPU fallback: " + ", ".join(r.fallbacks)) if r.fallbacks else r.first_error
        note = note.replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(f"| `{r.name}` | {r.status} | {fwd} | {grd} | {note} |")
    return lines


def summary(results: List[H.Result]) -> List[str]:
    by = collections.Counter(r.status for r in results)
    compared = [r for r in results if r.samples]
    native = [r for r in compared if not r.fallbacks and r.status != H.NO_DTYPE]
    fs = sum(r.samples for r in native)
    fo = sum(r.forward_ok for r in native)
    gc = sum(r.grad_checked for r in native)
    go = sum(r.grad_ok for r in native)
    return [
        f"- OpInfo entries: {len(results)}; "
        + "; ".join(f"{k}: {v}" for k, v in sorted(by.items())),
        f"- entries run natively on the daemon (no CPU fallback): {len(native)}",
        f"- their forward samples matching PyTorch: {fo}/{fs}"
        + (f" ({100.0 * fo / fs:.1f}%)" if fs else ""),
        f"- their gradient checks matching PyTorch: {go}/{gc}"
        + (f" ({100.0 * go / gc:.1f}%)" if gc else ""),
    ]


def write_doc(results: List[H.Result], catalog: Dict[str, object]) -> None:
    import torch
    text = [
        "# The op surface: tensord's ops and PyTorch's OpInfo samples",
        "",
        "Generated by `tools/op_coverage.py --write` (do not edit by hand) with PyTorch "
        f"{torch.__version__.split('+')[0]}: every entry of its OpInfo database "
        "(`torch.testing._internal.common_methods_invocations.op_db`) run on the `tensord` "
        f"PyTorch device (CPU daemon), up to {H.MAX_SAMPLES} float32 samples per entry, "
        f"compared with CPU PyTorch (rtol {H.RTOL}, atol {H.ATOL}), gradients for a random "
        "cotangent where the entry supports autograd. *falls back*: some ATen op the entry "
        "calls is not mapped onto the daemon (its values are not counted). Random and "
        "uninitialised ops are *not compared*, and so are samples whose reference PyTorch "
        "itself cannot compute on the CPU or draws from its random generator (a dropout "
        "probability above 0). *dtype not on the device*: the samples that fail are all "
        "refused by the device for their dtype (complex, int16: a clean TypeError; not counted "
        "as run natively). Not covered yet: other dtypes, non-contiguous "
        "samples, in-place and `out=` variants, the CUDA device (no GPU was lent when this was "
        "generated). `tests/python_torch/test_opinfo.py` holds the passing entries to passing.",
        "",
        "## Summary",
        "",
        *summary(results),
        "",
        "## The daemon's ops",
        "",
        "CUDA *no*: the row is listed in `KnownCpuOnly` of `runtime/ops/cuda_op_table_test.cc` "
        "(which checks the list on a CUDA build); view and composite rows run on every device.",
        "",
        *catalog_table(catalog),
        "",
        "## OpInfo entries",
        "",
        *opinfo_table(results),
        "",
    ]
    with open(DOC, "w") as f:
        f.write("\n".join(text))


def worker(address: str, start: int, names: List[str], max_samples: int) -> None:
    """Runs the entries from op_db index ``start`` on, one JSON line on stdout per entry; each
    entry's index goes to stderr first, so the parent can name an entry that killed it."""
    import json
    import warnings
    warnings.simplefilter("ignore")
    import tensord.torch as tdt
    tdt.connect(address)
    wanted = set(names)
    for i, op in enumerate(H.op_db()):
        if i < start or (wanted and H.entry_name(op) not in wanted):
            continue
        print(f"BEGIN {i}", file=sys.stderr, flush=True)
        r = H.run_entry(op, tdt.fallback_counts, tdt.reset_fallback_counts, max_samples)
        print(json.dumps(dataclasses.asdict(r)), flush=True)
    tdt.close()


def run_isolated(address: str, names: List[str], max_samples: int,
                 progress: bool) -> List[H.Result]:
    """Every entry in worker processes: an entry that kills its worker (an abort in PyTorch or
    the client) is reported as crashing, and a new worker goes on after it."""
    import json
    results: List[H.Result] = []
    start = 0
    while True:
        cmd = [sys.executable, __file__, "--worker", address, "--start", str(start),
               "--max-samples", str(max_samples), *names]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        current = [None]

        def read_err() -> None:
            for line in proc.stderr:
                if line.startswith("BEGIN "):
                    current[0] = int(line.split()[1])

        import threading
        t = threading.Thread(target=read_err, daemon=True)
        t.start()
        for line in proc.stdout:
            r = H.Result(**{**json.loads(line), "fallbacks": ()})
            r.fallbacks = tuple(json.loads(line)["fallbacks"])
            results.append(r)
            if progress:
                print(f"{r.name}: {r.status}", file=sys.stderr, flush=True)
        rc = proc.wait()
        t.join()
        if rc == 0 or current[0] is None:
            return results
        op = H.op_db()[current[0]]
        results.append(H.Result(H.entry_name(op), H.CRASH,
                                first_error=f"the client process died (exit {rc})"))
        start = current[0] + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="OpInfo entries (name or name.variant); all if none")
    ap.add_argument("--write", action="store_true", help="regenerate docs/ops.md")
    ap.add_argument("--update-list", action="store_true",
                    help="rewrite tests/python_torch/opinfo_passing.txt from this run")
    ap.add_argument("--progress", action="store_true", help="each entry's status on stderr")
    ap.add_argument("--max-samples", type=int, default=H.MAX_SAMPLES)
    ap.add_argument("--daemon", default=DAEMON, help="the tensord binary (default: bazel-bin's)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # the daemon's address
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.worker:
        worker(opts.worker, opts.start, opts.names, opts.max_samples)
        return
    import tensord.torch as tdt
    with Daemon(opts.daemon) as address:
        results = run_isolated(address, opts.names, opts.max_samples, opts.progress)
        tdt.connect(address)
        catalog = dict(tdt.current().catalog)
        tdt.close()
    for r in results:
        extra = ("  [" + ", ".join(r.fallbacks) + "]") if r.fallbacks else (
            f"  {r.first_error}" if r.first_error else "")
        print(f"{r.name:45s} {r.status:18s} fwd {r.forward_ok}/{r.samples} "
              f"grad {r.grad_ok}/{r.grad_checked}{extra}")
    print("\n".join(summary(results)))
    if opts.write:
        write_doc(results, catalog)
        print(f"wrote {DOC}")
    if opts.update_list:
        write_passing(results)


def write_passing(results: List[H.Result]) -> None:
    """The passing entries: 'name' (forward and gradients) or 'name forward' (values only)."""
    lines = []
    for r in results:
        if r.status == H.PASS:
            lines.append(r.name)
        elif r.status == H.FAIL_GRAD:
            lines.append(f"{r.name} forward")
    header = ("# OpInfo entries that pass on the tensord device (tests/python_torch/test_opinfo.py"
              " holds them to it).\n# Regenerated by tools/op_coverage.py --update-list; an "
              "entry leaves this list only with a reason in the commit.\n")
    with open(PASSING, "w") as f:
        f.write(header + "\n".join(lines) + "\n")
    print(f"wrote {PASSING} ({len(lines)} entries)")


if __name__ == "__main__":
    main()
