"""PyTorch's OpInfo samples on the tensord device: the entries that pass stay passing.

``opinfo_passing.txt`` lists the OpInfo entries (``name`` or ``name.variant``) whose capped
float32 samples (``opinfo_harness.MAX_SAMPLES``) match CPU PyTorch forward and backward on the
daemon with no CPU fallback; an entry followed by ``forward`` is held to its values only (its
gradients do not all match yet). ``tools/op_coverage.py`` reports every entry and regenerates the
list and docs/ops.md. An entry of the list that fails here is a regression: nothing skips.
"""

from __future__ import annotations

import os
from typing import Dict, List

import pytest

torch = pytest.importorskip("torch")

import opinfo_harness as H  # noqa: E402  (tests/python_torch is on sys.path under pytest)

LIST = os.path.join(os.path.dirname(__file__), "opinfo_passing.txt")


def _listed() -> Dict[str, bool]:
    """Entry name -> whether its gradients are held to PyTorch's too."""
    out = {}
    for line in open(LIST):
        words = line.split()
        if words and not words[0].startswith("#"):
            out[words[0]] = words[1:] != ["forward"]
    return out


LISTED = _listed()


def _ops() -> Dict[str, object]:
    try:
        return {H.entry_name(op): op for op in H.op_db() if H.entry_name(op) in LISTED}
    except Exception:  # noqa: BLE001 (an old PyTorch, which conftest skips, or expecttest
        return {}      # missing: then every listed entry fails, naming the first test)


OPS = _ops()


def test_every_listed_entry_is_in_pytorchs_op_db() -> None:
    missing: List[str] = sorted(set(LISTED) - set(OPS))
    assert not missing, (f"entries of {LIST} not in this PyTorch's op_db (renamed? "
                         f"torch.testing._internal importable?): {missing}")


@pytest.mark.parametrize("name", sorted(LISTED))
def test_opinfo_entry_matches_pytorch(td: object, name: str) -> None:
    op = OPS.get(name)
    if op is None:
        pytest.fail(f"{name} is not in op_db (see test_every_listed_entry_is_in_pytorchs_op_db)")
    r = H.run_entry(op, td.fallback_counts, td.reset_fallback_counts)
    assert not r.fallbacks, f"{name}: ops left the daemon for the CPU: {r.fallbacks}"
    assert r.samples > 0, f"{name}: no samples ran ({r.status}: {r.first_error})"
    assert r.forward_ok == r.samples, (
        f"{name}: {r.samples - r.forward_ok} of {r.samples} samples differ from PyTorch: "
        f"{r.first_error}")
    if LISTED[name]:
        assert r.grad_ok == r.grad_checked, (
            f"{name}: {r.grad_checked - r.grad_ok} of {r.grad_checked} gradient checks differ "
            f"from PyTorch: {r.first_error}")
    td.reset_fallback_counts()
