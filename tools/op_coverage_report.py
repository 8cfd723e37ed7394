"""docs/ops.md and the console summary of an OpInfo coverage run (``tools/op_coverage.py``).

One row per OpInfo entry: its base case (float32, PyTorch's samples as made) in full, then a
mark per variant for each dtype; a table of case counts per dtype and variant above it.
"""

from __future__ import annotations

import collections
import os
import re
import sys
from typing import Dict, List

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python_torch"))

import opinfo_harness as H  # noqa: E402
import opinfo_variants as V  # noqa: E402

DOC = os.path.join(ROOT, "docs", "ops.md")
CPU_ONLY_SRC = os.path.join(ROOT, "runtime", "ops", "known_cpu_only.cc")
DTYPE_NAMES = [H.dtype_name(d) for d in H.DTYPES]
# One character per case in the per-entry table.
MARKS = {H.PASS: "✓", H.FAIL_GRAD: "g", H.FAIL_FORWARD: "✗", H.FALLBACK: "F", H.NO_DTYPE: "d",
         H.CRASH: "!", H.SKIPPED: "?", H.NO_SAMPLES: "·", H.NOT_IN_OPINFO: "·",
         H.NO_VARIANT: "·"}
LEGEND = ("Each dtype's cell has one mark per variant, in the order plain, non-contiguous, "
          "in-place, `out=`: ✓ passes, g values match but gradients do not, ✗ values differ, "
          "F falls back to the CPU, d dtype not on the device, ! kills the client, ? not "
          "compared (random, or PyTorch's reference not comparable), · not applicable (the "
          "OpInfo has no such dtype, variant or samples), blank: not run.")
NOT_APPLICABLE = (H.NO_SAMPLES, H.NOT_IN_OPINFO, H.NO_VARIANT)
# The statuses of cases that ran on the device and were compared.
COMPARED = (H.PASS, H.FAIL_GRAD, H.FAIL_FORWARD, H.FALLBACK, H.NO_DTYPE, H.CRASH)


def is_base(r: H.Result) -> bool:
    return (r.dtype, r.variant) == ("float32", V.PLAIN)


def cpu_only_rows() -> List[str]:
    """KnownCpuOnly() of known_cpu_only.cc: the compute rows without a CUDA kernel."""
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


def _note(r: H.Result) -> str:
    note = ("CPU fallback: " + ", ".join(r.fallbacks)) if r.fallbacks else r.first_error
    return note.replace("|", "\\|").replace("\n", " ")[:160]


def opinfo_table(results: List[H.Result]) -> List[str]:
    by: Dict[str, Dict[tuple, H.Result]] = collections.OrderedDict()
    for r in results:
        by.setdefault(r.name, {})[(r.dtype, r.variant)] = r
    lines = ["| OpInfo entry | float32 status | forward samples | gradient checks | "
             + " | ".join(DTYPE_NAMES) + " | note |",
             "|---|---|---|---|" + "---|" * len(DTYPE_NAMES) + "---|"]
    for name, cases in by.items():
        base = cases.get(("float32", V.PLAIN))
        status = base.status if base else ""
        fwd = f"{base.forward_ok}/{base.samples}" if base and base.samples else ""
        grd = f"{base.grad_ok}/{base.grad_checked}" if base and base.grad_checked else ""
        marks = ["".join(MARKS[cases[(d, v)].status] if (d, v) in cases else " "
                         for v in V.VARIANTS) for d in DTYPE_NAMES]
        bad = [r for r in cases.values() if r.status in COMPARED and r.status != H.PASS]
        first = base if base and base.status != H.PASS else (bad[0] if bad else None)
        note = ""
        if first is not None and _note(first):
            where = "" if is_base(first) else f"{first.dtype} {first.variant}: "
            note = where + _note(first)
        lines.append(f"| `{name}` | {status} | {fwd} | {grd} | "
                     + " | ".join(f"`{m}`" for m in marks) + f" | {note} |")
    return lines


def case_table(results: List[H.Result]) -> List[str]:
    """Per dtype and variant: cases passing / compared (and the share of forward samples)."""
    lines = ["| dtype | " + " | ".join(V.VARIANTS) + " |",
             "|---|" + "---|" * len(V.VARIANTS)]
    for d in DTYPE_NAMES:
        cells = []
        for v in V.VARIANTS:
            rs = [r for r in results if (r.dtype, r.variant) == (d, v)
                  and r.status in COMPARED]
            ok = sum(r.status == H.PASS for r in rs)
            native = [r for r in rs if not r.fallbacks and r.status != H.NO_DTYPE]
            fs = sum(r.samples for r in native)
            fo = sum(r.forward_ok for r in native)
            cells.append(f"{ok}/{len(rs)}" + (f" ({100.0 * fo / fs:.1f}% samples)" if fs
                                               else "") if rs else "")
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return lines


def summary(results: List[H.Result]) -> List[str]:
    base = [r for r in results if is_base(r)]
    by = collections.Counter(r.status for r in base)
    native = [r for r in base if r.samples and not r.fallbacks and r.status != H.NO_DTYPE]
    fs = sum(r.samples for r in native)
    fo = sum(r.forward_ok for r in native)
    gc = sum(r.grad_checked for r in native)
    go = sum(r.grad_ok for r in native)
    return [
        f"- OpInfo entries (float32 base case): {len(base)}; "
        + "; ".join(f"{k}: {v}" for k, v in sorted(by.items())),
        f"- entries run natively on the daemon (no CPU fallback): {len(native)}",
        f"- their forward samples matching PyTorch: {fo}/{fs}"
        + (f" ({100.0 * fo / fs:.1f}%)" if fs else ""),
        f"- their gradient checks matching PyTorch: {go}/{gc}"
        + (f" ({100.0 * go / gc:.1f}%)" if gc else ""),
        f"- cases (entry, dtype, variant) run: {len(results)}; passing: "
        f"{sum(r.status == H.PASS for r in results)}",
    ]


def write_doc(results: List[H.Result], catalog: Dict[str, object], max_samples: object,
              extra_samples: object) -> None:
    import torch
    caps = ("all samples" if max_samples is None else f"up to {max_samples} samples") + \
        " for the float32 base case, " + ("all" if extra_samples is None else
                                           f"up to {extra_samples}") + " for the other cases"
    r32, a32 = H.RTOL, H.ATOL
    text = [
        "# The op surface: tensord's ops and PyTorch's OpInfo samples",
        "",
        "Generated by `tools/op_coverage.py --write` (do not edit by hand) with PyTorch "
        f"{torch.__version__.split('+')[0]}: every entry of its OpInfo database "
        "(`torch.testing._internal.common_methods_invocations.op_db`) run on the `tensord` "
        "PyTorch device (CPU daemon) in every dtype the device and the OpInfo share "
        f"({', '.join(DTYPE_NAMES)}) and every variant (plain; non-contiguous inputs; the "
        f"in-place variant; `out=`), {caps}, compared with CPU PyTorch (float32: rtol {r32}, "
        f"atol {a32}; float64 and bfloat16 per `tests/python_torch/opinfo_compare.py`; integers "
        "and bool exactly), gradients for a random cotangent where the entry supports autograd "
        "in a floating dtype. *falls back*: some ATen op the case calls is not mapped onto the "
        "daemon (its values are not counted). Random and uninitialised ops are *not compared*, "
        "and so are samples whose reference PyTorch itself cannot compute on the CPU or draws "
        "from its random generator (a dropout probability above 0). *dtype not on the device*: "
        "the samples that fail are all refused by the device for their dtype (complex, int16: "
        "a clean TypeError; not counted as run natively). Not covered yet: the CUDA device (no "
        "GPU was lent when this was generated). `tests/python_torch/test_opinfo.py` holds the "
        "passing cases to passing.",
        "",
        "## Summary",
        "",
        *summary(results),
        "",
        "Cases passing / compared per dtype and variant (and the share of their forward "
        "samples that match, over the cases that ran natively):",
        "",
        *case_table(results),
        "",
        "## The daemon's ops",
        "",
        "CUDA *no*: the row is listed in `KnownCpuOnly` of `runtime/ops/known_cpu_only.cc` "
        "(`known_cpu_only_test` checks the list on a CUDA build); view and composite rows run "
        "on every device.",
        "",
        *catalog_table(catalog),
        "",
        "## OpInfo entries",
        "",
        LEGEND + " The note is the first failing case's first error.",
        "",
        *opinfo_table(results),
        "",
    ]
    with open(DOC, "w") as f:
        f.write("\n".join(text))
