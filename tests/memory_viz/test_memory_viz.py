"""Memory history end to end (issue 29): two tenants' work against the real daemon with
``--memory_history``, ``tensorctl snapshot``, drawn by PyTorch's own viewer
(``python -m torch.cuda._memory_viz trace_plot|segment_plot``), whose HTML must carry every
tenant's events: their call sites as frames and their sessions as the timeline's categories.
Also ``tensorctl memory-history`` at runtime: a smaller ring keeps the newest events, off
forgets them. Note [Memory history] in runtime/memory/memory_history.h.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
import subprocess
import sys
from typing import Iterator

import pytest

from conftest import REPO, running_daemon

CLIENT = os.environ.get("TENSORD_PYTHON_CLIENT") or os.path.join(REPO, "client", "python")

# One tenant's program. Line 4 allocates a block that stays, line 5 one that is freed (del
# on line 7); the session stays open until the test writes a line.
WORKLOAD = """import sys
import tensord
session = tensord.connect(sys.argv[1])
kept = tensord.randn(128, 128)
scratch = kept.matmul(kept)
total = (scratch + 1).sum().item()
del scratch
tensord.synchronize()
print(session.session_id, flush=True)
sys.stdin.readline()
session.close()
"""


@pytest.fixture
def daemon() -> Iterator[str]:
    with running_daemon("--memory_history=10000") as address:
        yield address


def ctl(tensorctl: str, address: str, *args: str) -> str:
    done = subprocess.run([tensorctl, f"--server={address}", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"tensorctl {' '.join(args)}: {done.stderr}"
    return done.stdout


def start_tenant(tmp_path: object, name: str, address: str) -> subprocess.Popen:
    script = os.path.join(str(tmp_path), f"{name}.py")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    env = dict(os.environ, PYTHONPATH=CLIENT)
    return subprocess.Popen([sys.executable, script, address], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


def viewer(kind: str, snapshot: str, html: str) -> str:
    """Runs PyTorch's viewer; returns the HTML it wrote."""
    done = subprocess.run([sys.executable, "-m", "torch.cuda._memory_viz", kind, snapshot,
                           "-o", html], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"_memory_viz {kind}: {done.stderr}"
    with open(html) as f:
        return f.read()


def embedded_snapshot(html: str) -> dict:
    """The snapshot the viewer's page carries (base64 of its pickle)."""
    m = re.search(r"const local_files = (\[.*?\])\n", html)
    assert m, "the viewer's HTML embeds no snapshot"
    return pickle.loads(base64.b64decode(json.loads(m.group(1))[0]["base64"]))


def events(snap: dict) -> list:
    assert len(snap["device_traces"]) == 1  # cpu is device 0
    return snap["device_traces"][0]


def test_two_tenants_history_drawn_by_pytorchs_viewer(tmp_path, daemon, tensorctl):
    tenants = {name: start_tenant(tmp_path, name, daemon) for name in ("alice_train", "bob_eval")}
    try:
        ids = {name: p.stdout.readline().strip() for name, p in tenants.items()}
        assert all(ids.values()), f"a tenant did not start: {ids}"
        assert "cpu: memory history on, keeping the newest 10000 events" in ctl(
            tensorctl, daemon, "memory-history")
        pickled = str(tmp_path / "snap.pickle")
        ctl(tensorctl, daemon, "snapshot", "-o", pickled)
        as_json = str(tmp_path / "snap.json")
        ctl(tensorctl, daemon, "snapshot", "-o", as_json)
    finally:
        for p in tenants.values():
            p.stdin.write("\n")
            p.stdin.close()
            assert p.wait(timeout=60) == 0

    with open(pickled, "rb") as f:
        snap = pickle.load(f)
    with open(as_json) as f:
        same = json.load(f)
    # The same state in both forms (two snapshots: only the closing event's time differs).
    for s in (snap, same):
        del events(s)[-1]["time_us"]
    assert snap == same

    trace = events(snap)
    assert trace[-1]["action"] == "snapshot"
    assert {"segment_alloc", "alloc", "free_requested", "free_completed"} <= {
        e["action"] for e in trace}
    for name, session_id in ids.items():
        category = f"session {session_id}"
        mine = [e for e in trace if e["category"] == category]
        allocs = [e for e in mine if e["action"] == "alloc"]
        sites = {(f["filename"], f["line"]) for e in allocs for f in e["frames"]}
        assert (f"{name}.py", 4) in sites and (f"{name}.py", 5) in sites, sites
        assert all(e["frames"][0]["name"] == category for e in mine)
        # The freed block (line 5's) is named after the session that held it.
        line5 = [e["addr"] for e in allocs if e["frames"][0]["line"] == 5]
        freed = [e for e in mine if e["action"] == "free_requested"]
        assert set(line5) & {e["addr"] for e in freed}, (line5, freed)
    # Every event of a session appears in its own category only.
    assert {e["category"] for e in trace} == {f"session {i}" for i in ids.values()} | {
        "unknown"}

    timeline = viewer("trace_plot", pickled, str(tmp_path / "trace.html"))
    assert "Active Memory Timeline" in timeline
    history = viewer("segment_plot", pickled, str(tmp_path / "segments.html"))
    assert "Allocator State History" in history
    for html in (timeline, history):
        drawn = events(embedded_snapshot(html))
        files = {f["filename"] for e in drawn for f in e["frames"]}
        assert {"alice_train.py", "bob_eval.py"} <= files
        assert {f"session {i}" for i in ids.values()} <= {e["category"] for e in drawn}


def test_memory_history_switched_at_runtime(tmp_path, tensorctl):
    with running_daemon() as address:  # off by default
        # --device=cpu: a GPU box lists cuda:0 as well.
        assert ctl(tensorctl, address, "--device=cpu",
                   "memory-history") == "cpu: memory history off\n"
        out = ctl(tensorctl, address, "--device=cpu", "memory-history", "on")
        assert "keeping the newest 100000 events" in out
        tenant = start_tenant(tmp_path, "carol", address)
        try:
            assert tenant.stdout.readline().strip()
            before = str(tmp_path / "before.pickle")
            ctl(tensorctl, address, "snapshot", "-o", before)
            # A ring of 8: the newest 8 events are kept.
            state = json.loads(ctl(tensorctl, address, "--json", "--device=cpu",
                                   "memory-history", "on", "--max_entries", "8"))
            assert state == {"devices": [{"device": "cpu", "max_entries": 8, "events": 8}]}
            after = str(tmp_path / "after.pickle")
            ctl(tensorctl, address, "snapshot", "-o", after)
            with open(before, "rb") as f:
                full = events(pickle.load(f))[:-1]
            with open(after, "rb") as f:
                kept = events(pickle.load(f))[:-1]
            assert len(full) > 8
            assert kept == full[-8:]
            # Off forgets them: the snapshot's trace is empty.
            assert "memory history off" in ctl(tensorctl, address, "--device=cpu",
                                               "memory-history", "off")
            empty = str(tmp_path / "off.json")
            ctl(tensorctl, address, "snapshot", "-o", empty)
            with open(empty) as f:
                assert json.load(f)["device_traces"] == [[]]
        finally:
            tenant.stdin.write("\n")
            tenant.stdin.close()
            assert tenant.wait(timeout=60) == 0
