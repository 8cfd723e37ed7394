"""A real CPU fallback of the tensord device reaches the daemon (Note [Client fallbacks]): the
session's profiler lists it (``tensord.profiler``, ``tensorctl profile``), and ``tensorctl
sessions --json`` / ``users --json`` count it, as docs/tensorctl.md documents."""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from typing import Any, Dict

import pytest

from conftest import REPO

torch = pytest.importorskip("torch")

TENSORCTL = os.environ.get("TENSORCTL", os.path.join(REPO, "bazel-bin", "tools", "tensorctl"))
OP = "aten.linalg_matrix_sqrth.default"  # no daemon row, no decomposition: the CPU fallback


def need_tensorctl() -> None:
    if not os.access(TENSORCTL, os.X_OK):
        pytest.fail(f"tensorctl is not built ({TENSORCTL}): bazel build //tools:tensorctl")


def tensorctl(address: str, *args: str, timeout: float = 60) -> Dict[str, Any]:
    need_tensorctl()
    r = subprocess.run([TENSORCTL, f"--server={address}", "--json", *args],
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def session_fallbacks(address: str, session_id: str) -> Dict[str, int]:
    for s in tensorctl(address, "sessions")["sessions"]:
        if s["session_id"] == session_id:
            return s["fallbacks"]
    raise AssertionError(f"session {session_id} not in tensorctl sessions")


def unmapped_op() -> None:
    x = torch.tensor([[3.0, 1.0], [1.0, 2.0]], device="tensord")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FallbackWarning: once per op and process
        a = torch.linalg.matrix_sqrth(x)
    assert torch.equal(a.cpu(), torch.linalg.matrix_sqrth(x.cpu()))


@pytest.mark.allow_fallback
def test_a_fallback_is_in_the_profiler_and_tensorctls_json(td: Any, daemon: str) -> None:
    import tensord
    s = td.session()
    before = session_fallbacks(daemon, s.session_id).get(OP, 0)
    with tensord.profiler.profile(s) as prof:
        unmapped_op()
    assert td.fallback_counts() == {OP: 1}
    assert prof.fallbacks == {OP: 1}
    assert OP in prof.key_averages().table()
    s.synchronize()
    assert session_fallbacks(daemon, s.session_id).get(OP, 0) == before + 1
    users = tensorctl(daemon, "users", "--interval=100ms")["users"]
    assert sum(u["fallbacks_total"] for u in users) >= before + 1


@pytest.mark.allow_fallback
def test_tensorctl_profile_lists_the_fallbacks_of_its_window(td: Any, daemon: str) -> None:
    need_tensorctl()
    s = td.session()
    s.synchronize()
    proc = subprocess.Popen([TENSORCTL, f"--server={daemon}", "--json", "profile",
                             s.session_id, "--duration=1s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    calls = 0
    try:
        while proc.poll() is None or calls == 0:  # fall back until its window closed
            unmapped_op()
            calls += 1
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    profile = json.loads(out)
    assert 1 <= profile["fallbacks"].get(OP, 0) <= calls
