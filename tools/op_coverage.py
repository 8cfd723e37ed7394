"""PyTorch's OpInfo database on the tensord PyTorch device: per-case status and docs/ops.md.

Run from the repository root with the project's venv, after ``bazel build //server:tensord``::

    PYTHONPATH=client/python .venv-torch/bin/python tools/op_coverage.py \
        [--write] [--update-list] [--progress] [--jobs N] [--listed] [--dtypes ...] \
        [--variants ...] [--max-samples N] [--extra-samples N] [NAME ...]

Starts a daemon and runs every OpInfo entry (or the NAMEs given, or ``--listed``: those of the
passing list) through ``tests/python_torch/opinfo_harness.py`` in every dtype and variant asked
for (by default all: float32/float64/int64/bool/bfloat16 x plain/noncontig/inplace/out), and
prints one line per case (entry, dtype, variant): passes / fails forward / fails grad / falls
back (to the CPU: an op the device does not map) / not compared / kills the client / not
applicable. Cases run in worker processes (``--jobs`` of them at once), so one that aborts the
client (a crash in PyTorch or the device) is reported and the rest go on. ``--write``
regenerates docs/ops.md (``op_coverage_report.py``); ``--update-list`` rewrites
tests/python_torch/opinfo_passing.txt for the cases this run covered (the others keep their
lines): review its diff, since a case that drops out of it is a regression unless the commit
says why. The float32 base case takes ``--max-samples`` samples, the others ``--extra-samples``
(default: all of them, as PyTorch's own tests); the list that test_opinfo.py checks on its caps
(6 and 2) may be made with those. Every case of the 703 entries on all samples takes about 21
minutes on a 2-core VM (``--jobs 2``); ``--listed --max-samples 6 --extra-samples 2`` about 3. Needs ``expecttest`` in the venv
(torch.testing._internal imports it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Tuple

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python_torch"))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TENSORD_TORCH_CHECK", "1")

import op_coverage_report as report  # noqa: E402
import opinfo_harness as H  # noqa: E402
import opinfo_list  # noqa: E402
import opinfo_variants as V  # noqa: E402

DAEMON = os.environ.get("TENSORD_BINARY", os.path.join(ROOT, "bazel-bin", "server", "tensord"))
PASSING = os.path.join(ROOT, "tests", "python_torch", "opinfo_passing.txt")


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


@dataclasses.dataclass
class Plan:
    """Which cases a worker runs: entries by op_db index, each in every dtype x variant."""
    indices: List[int]
    dtypes: List[str]
    variants: List[str]
    max_samples: Optional[int]
    extra_samples: Optional[int]

    def cases(self) -> List[Tuple[int, str, str]]:
        return [(i, d, v) for i in self.indices for d in self.dtypes for v in self.variants]

    def args(self) -> List[str]:
        cap = ["all" if n is None else str(n) for n in (self.max_samples, self.extra_samples)]
        return ["--dtypes", *self.dtypes, "--variants", *self.variants,
                "--max-samples", cap[0], "--extra-samples", cap[1]]


def worker(address: str, plan: Plan, skip: int) -> None:
    """Runs the plan's cases after the first ``skip``, one JSON line on stdout per case; each
    case's position goes to stderr first, so the parent can name a case that killed it."""
    import warnings
    warnings.simplefilter("ignore")
    import tensord.torch as tdt
    tdt.connect(address)
    db = H.op_db()
    for k, (i, d, v) in enumerate(plan.cases()):
        if k < skip:
            continue
        print(f"BEGIN {k}", file=sys.stderr, flush=True)
        base = (d, v) == (opinfo_list.BASE_DTYPE, V.PLAIN)
        r = H.run_entry(db[i], tdt.fallback_counts, tdt.reset_fallback_counts,
                        plan.max_samples if base else plan.extra_samples, H.dtype_of(d), v)
        print(json.dumps(dataclasses.asdict(r)), flush=True)
    tdt.close()


def run_isolated(address: str, plan: Plan, progress: bool) -> List[H.Result]:
    """The plan's cases in worker processes: a case that kills its worker (an abort in PyTorch
    or the client) is reported as crashing, and a new worker goes on after it."""
    results: List[H.Result] = []
    cases = plan.cases()
    db = H.op_db()
    skip = 0
    while True:
        cmd = [sys.executable, __file__, "--worker", address, "--skip", str(skip),
               "--indices", ",".join(map(str, plan.indices)), *plan.args()]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        current = [None]

        def read_err() -> None:
            for line in proc.stderr:
                if line.startswith("BEGIN "):
                    current[0] = int(line.split()[1])

        t = threading.Thread(target=read_err, daemon=True)
        t.start()
        for line in proc.stdout:
            d = json.loads(line)
            r = H.Result(**{**d, "fallbacks": tuple(d["fallbacks"])})
            results.append(r)
            if progress:
                print(f"{r.name} {r.dtype} {r.variant}: {r.status}", file=sys.stderr, flush=True)
        rc = proc.wait()
        t.join()
        if rc == 0 or current[0] is None:
            return results
        i, dt, v = cases[current[0]]
        results.append(H.Result(H.entry_name(db[i]), H.CRASH, dt, v,
                                first_error=f"the client process died (exit {rc})"))
        skip = current[0] + 1


def run_jobs(address: str, plan: Plan, jobs: int, progress: bool) -> List[H.Result]:
    """The plan split over ``jobs`` workers (entries dealt round-robin), results in op_db
    order."""
    shards = [dataclasses.replace(plan, indices=plan.indices[j::jobs]) for j in range(jobs)]
    with ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda p: run_isolated(address, p, progress), shards))
    rank = {H.entry_name(op): i for i, op in enumerate(H.op_db())}
    order = {(d, v): k for k, (d, v) in enumerate(
        (d, v) for d in plan.dtypes for v in plan.variants)}
    results = [r for part in parts for r in part]
    return sorted(results, key=lambda r: (rank[r.name], order[(r.dtype, r.variant)]))


def write_passing(results: List[H.Result]) -> None:
    """The list with this run's cases replaced: passing ones in, failing ones out."""
    cases = opinfo_list.read(PASSING)
    for r in results:
        key = (r.name, r.dtype, r.variant)
        cases.pop(key, None)
        if r.status == H.PASS:
            cases[key] = True
        elif r.status == H.FAIL_GRAD:
            cases[key] = False
    n = opinfo_list.write(PASSING, cases, [H.entry_name(op) for op in H.op_db()])
    print(f"wrote {PASSING} ({len(cases)} cases in {n} lines)")


def _cap(text: str) -> Optional[int]:
    return None if text == "all" else int(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="OpInfo entries (name or name.variant); all if none")
    ap.add_argument("--listed", action="store_true",
                    help="the entries of tests/python_torch/opinfo_passing.txt (with NAMEs: both)")
    ap.add_argument("--dtypes", nargs="+", default=report.DTYPE_NAMES)
    ap.add_argument("--variants", nargs="+", default=list(V.VARIANTS), choices=V.VARIANTS)
    ap.add_argument("--write", action="store_true", help="regenerate docs/ops.md")
    ap.add_argument("--update-list", action="store_true",
                    help="rewrite tests/python_torch/opinfo_passing.txt from this run's cases")
    ap.add_argument("--progress", action="store_true", help="each case's status on stderr")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at once")
    ap.add_argument("--max-samples", type=_cap, default=None,
                    help="samples of the float32 base case: a number or 'all' (default)")
    ap.add_argument("--extra-samples", type=_cap, default=None,
                    help="samples of every other case: a number or 'all' (default)")
    ap.add_argument("--daemon", default=DAEMON, help="the tensord binary (default: "
                    "$TENSORD_BINARY, else bazel-bin's)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)  # the daemon's address
    ap.add_argument("--indices", help=argparse.SUPPRESS)
    ap.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    for d in opts.dtypes:
        H.dtype_of(d)
    if opts.worker:
        indices = [int(i) for i in opts.indices.split(",") if i]
        worker(opts.worker, Plan(indices, opts.dtypes, opts.variants, opts.max_samples,
                                 opts.extra_samples), opts.skip)
        return
    wanted = set(opts.names)
    if opts.listed:
        wanted |= {c[0] for c in opinfo_list.read(PASSING)}
    indices = [i for i, op in enumerate(H.op_db()) if not wanted or H.entry_name(op) in wanted]
    plan = Plan(indices, opts.dtypes, opts.variants, opts.max_samples, opts.extra_samples)
    import tensord.torch as tdt
    started = time.monotonic()
    with Daemon(opts.daemon) as address:
        results = run_jobs(address, plan, max(1, opts.jobs), opts.progress)
        tdt.connect(address)
        catalog = dict(tdt.current().catalog)
        tdt.close()
    for r in results:
        extra = ("  [" + ", ".join(r.fallbacks) + "]") if r.fallbacks else (
            f"  {r.first_error}" if r.first_error else "")
        print(f"{r.name:40s} {r.dtype:8s} {r.variant:9s} {r.status:23s} "
              f"fwd {r.forward_ok}/{r.samples} grad {r.grad_ok}/{r.grad_checked}{extra}")
    print("\n".join(report.summary(results)))
    print("\n".join(report.case_table(results)))
    print(f"{len(results)} cases in {time.monotonic() - started:.0f} s")
    if opts.write:
        report.write_doc(results, catalog, opts.max_samples, opts.extra_samples)
        print(f"wrote {report.DOC}")
    if opts.update_list:
        write_passing(results)


if __name__ == "__main__":
    main()
