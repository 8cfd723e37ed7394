"""torch.tensord.memory_allocated() / max_memory_allocated() / memory_reserved() /
memory_stats() / reset_peak_memory_stats(): the device session's own memory on the daemon, read
with the session protocol's GetMemoryStats (no admin rights; Note [Session stats])."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import REPO, running_daemon

torch = pytest.importorskip("torch")

MiB = 1 << 20


def test_memory_allocated_follows_the_sessions_tensors(td: object) -> None:
    gc.collect()
    before = torch.tensord.memory_allocated()
    x = torch.randn(256, 1024, device="tensord")  # 1 MiB: a multiple of every rounding
    assert torch.tensord.memory_allocated() == before + x.numel() * 4
    y = x[:128]  # a view holds no new bytes
    assert torch.tensord.memory_allocated() == before + x.numel() * 4
    del x, y
    assert torch.tensord.memory_allocated() == before  # released before the read
    assert td.memory_allocated is torch.tensord.memory_allocated


def test_peaks_and_their_reset(td: object) -> None:
    gc.collect()
    torch.tensord.reset_peak_memory_stats()
    base = torch.tensord.memory_allocated()
    assert torch.tensord.max_memory_allocated() == base
    x = torch.ones(1 << 20, device="tensord")  # 4 MiB
    del x
    assert torch.tensord.memory_allocated() == base
    peak = torch.tensord.max_memory_allocated()
    assert base + 4 * MiB <= peak < base + 4 * MiB + 64 * 1024  # with a scalar's block at most
    torch.tensord.reset_peak_memory_stats()
    assert torch.tensord.max_memory_allocated() == base


def test_memory_stats_have_torch_cuda_keys_of_this_session_only(td: object) -> None:
    x = torch.ones(1 << 20, device="tensord")  # 4 MiB
    stats = torch.tensord.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "allocation.large_pool.current", "requested_bytes.small_pool.peak",
                "num_ooms"):
        assert isinstance(stats[key], int), key
    assert stats["allocated_bytes.all.current"] == torch.tensord.memory_allocated()
    assert stats["allocated_bytes.all.current"] >= x.numel() * 4
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    # The daemon's cache is shared by every session: none of its figures are this one's.
    assert not [k for k in stats if k.startswith(("reserved_bytes", "segment", "session."))]
    assert torch.tensord.memory_reserved() == stats["allocated_bytes.all.current"]
    with pytest.raises(RuntimeError, match="one index"):
        torch.tensord.memory_allocated("tensord:1")


_PROGRAM = """
import torch, tensord.torch as tdt
tdt.connect({address!r}, token="tok-bob")
before = torch.tensord.memory_allocated()
x = torch.ones(256, 1024, device="tensord")
print("allocated:", torch.tensord.memory_allocated() - before)
"""


def test_a_tenant_without_admin_rights_reads_its_own_memory() -> None:
    tokens = os.path.join(tempfile.mkdtemp(prefix="tensord-tokens-"), "tokens")
    with open(tokens, "w") as f:
        f.write("bob tok-bob\n")
    os.chmod(tokens, 0o600)
    with running_daemon(f"--tokens_file={tokens}") as address:
        r = subprocess.run([sys.executable, "-c", _PROGRAM.format(address=address)],
                           env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "client", "python")),
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    grown = [int(line.split()[1]) for line in r.stdout.splitlines()
             if line.startswith("allocated:")]
    assert grown and MiB <= grown[0] < MiB + 64 * 1024, r.stdout
