"""PyTorch's OpInfo samples on the tensord device: the cases that pass stay passing.

``opinfo_passing.txt`` (format: ``opinfo_list.py``) lists the OpInfo cases (entry, dtype,
variant) that match CPU PyTorch forward and backward on the daemon with no CPU fallback, or
forward only where so marked. Every listed entry's base case (float32, the samples as PyTorch
makes them) runs on ``opinfo_harness.MAX_SAMPLES`` samples; the other listed cases (float64,
int64, bool, bfloat16; non-contiguous inputs; the in-place and ``out=`` variants) on their first
``EXTRA_SAMPLES`` only, to keep the suite's time. ``tools/op_coverage.py`` reports every case
and regenerates the list and docs/ops.md. A listed case that fails here is a regression:
nothing skips.
"""

from __future__ import annotations

import os
from typing import Dict, List

import pytest

torch = pytest.importorskip("torch")

import opinfo_harness as H  # noqa: E402  (tests/python_torch is on sys.path under pytest)
import opinfo_list  # noqa: E402
import opinfo_variants as V  # noqa: E402

LIST = os.path.join(os.path.dirname(__file__), "opinfo_passing.txt")
EXTRA_SAMPLES = 2  # samples per case beyond the base case (the suite's time: CI's budget)
CASES = opinfo_list.read(LIST)
BASE = {c[0]: g for c, g in CASES.items() if (c[1], c[2]) == (opinfo_list.BASE_DTYPE, V.PLAIN)}
EXTRA = sorted(c for c in CASES if (c[1], c[2]) != (opinfo_list.BASE_DTYPE, V.PLAIN))


def _ops() -> Dict[str, object]:
    names = {c[0] for c in CASES}
    try:
        return {H.entry_name(op): op for op in H.op_db() if H.entry_name(op) in names}
    except Exception:  # noqa: BLE001 (an old PyTorch, which conftest skips, or expecttest
        return {}      # missing: then every listed entry fails, naming the first test)


OPS = _ops()


def test_every_listed_entry_is_in_pytorchs_op_db() -> None:
    missing: List[str] = sorted({c[0] for c in CASES} - set(OPS))
    assert not missing, (f"entries of {LIST} not in this PyTorch's op_db (renamed? "
                         f"torch.testing._internal importable?): {missing}")


def _check(td: object, name: str, dtype: str, variant: str, max_samples: int,
           grads: bool) -> None:
    op = OPS.get(name)
    if op is None:
        pytest.fail(f"{name} is not in op_db (see test_every_listed_entry_is_in_pytorchs_op_db)")
    r = H.run_entry(op, td.fallback_counts, td.reset_fallback_counts, max_samples,
                    H.dtype_of(dtype), variant)
    case = f"{name} ({dtype}, {variant})"
    assert not r.fallbacks, f"{case}: ops left the daemon for the CPU: {r.fallbacks}"
    assert r.samples > 0, f"{case}: no samples ran ({r.status}: {r.first_error})"
    assert r.forward_ok == r.samples, (
        f"{case}: {r.samples - r.forward_ok} of {r.samples} samples differ from PyTorch: "
        f"{r.first_error}")
    if grads:
        assert r.grad_ok == r.grad_checked, (
            f"{case}: {r.grad_checked - r.grad_ok} of {r.grad_checked} gradient checks "
            f"differ from PyTorch: {r.first_error}")
    td.reset_fallback_counts()


@pytest.mark.parametrize("name", sorted(BASE))
def test_opinfo_entry_matches_pytorch(td: object, name: str) -> None:
    _check(td, name, opinfo_list.BASE_DTYPE, V.PLAIN, H.MAX_SAMPLES, BASE[name])


@pytest.mark.parametrize("name,dtype,variant", EXTRA, ids=["-".join(c) for c in EXTRA])
def test_opinfo_case_matches_pytorch(td: object, name: str, dtype: str, variant: str) -> None:
    _check(td, name, dtype, variant, EXTRA_SAMPLES, CASES[(name, dtype, variant)])
