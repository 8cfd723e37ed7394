"""torch.tensord.memory_allocated() / memory_reserved() / memory_stats(): the daemon's
allocator statistics for the device, read through its Admin service."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile

import pytest

from conftest import REPO, running_daemon

torch = pytest.importorskip("torch")


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


def test_memory_stats_have_torch_cuda_keys(td: object) -> None:
    x = torch.ones(1 << 20, device="tensord")  # 4 MiB
    stats = torch.tensord.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "reserved_bytes.all.current", "active_bytes.large_pool.current",
                "inactive_split_bytes.small_pool.peak", "num_alloc_retries", "num_ooms"):
        assert isinstance(stats[key], int), key
    mine = torch.tensord.memory_allocated()
    assert stats["allocated_bytes.all.current"] >= mine >= x.numel() * 4
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"]
    assert torch.tensord.memory_reserved() >= stats["allocated_bytes.all.current"]
    with pytest.raises(RuntimeError, match="one index"):
        torch.tensord.memory_allocated("tensord:1")


_PROGRAM = """
import torch, tensord.torch as tdt
tdt.connect({address!r}, token="tok-bob")
torch.ones(3, device="tensord")
try:
    torch.tensord.memory_stats()
except PermissionError as e:
    print("refused:", e)
"""


def test_without_admin_rights_the_error_says_what_to_do() -> None:
    tokens = os.path.join(tempfile.mkdtemp(prefix="tensord-tokens-"), "tokens")
    with open(tokens, "w") as f:
        f.write("bob tok-bob\n")
    with running_daemon(f"--tokens_file={tokens}") as address:
        r = subprocess.run([sys.executable, "-c", _PROGRAM.format(address=address)],
                           env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "client", "python")),
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "refused:" in r.stdout and "admin token" in r.stdout, r.stdout
