"""``Session.memory_stats`` (GetMemoryStats: the session's own memory, for any tenant; Note
[Session stats]) and ``Session.note_fallback`` (Note [Client fallbacks]) against the real
daemon, with the Admin service's view as the cross-check."""

from __future__ import annotations

import os

import pytest

import tensord as td
from conftest import running_daemon, session_info

MiB = 1 << 20
ALLOCATED = "allocated_bytes.all.current"
PEAK = "allocated_bytes.all.peak"


def test_figures_follow_the_sessions_own_tensors_only(daemon: str, admin: object) -> None:
    with td.connect(daemon) as mine:
        base = mine.memory_stats()
        x = td.ones(256, 1024)  # 1 MiB of float32: a multiple of every rounding
        held = mine.memory_stats()
        assert held[ALLOCATED] == base[ALLOCATED] + MiB
        assert held["allocation.all.current"] == base["allocation.all.current"] + 1
        assert held[PEAK] >= base[ALLOCATED] + MiB
        assert mine.memory_allocated("cpu") == held[ALLOCATED]
        # The operator's view of this session agrees.
        assert session_info(admin, mine.session_id).memory_bytes["cpu"] == held[ALLOCATED]
        with td.connect(daemon) as other:
            y = td.ones(1024, 1024)  # 4 MiB in another session
            assert other.memory_allocated() >= 4 * MiB
            again = mine.memory_stats()
            assert again == held  # nothing of the other session's, not even its peak
            shared = [k for k in again if any(w in k for w in ("reserved", "segment",
                                                                "session", "cached"))]
            assert shared == []  # nothing of the daemon-wide cache
            del y
        del x
        after = mine.memory_stats(reset_peak=True)  # the Release goes before the read
        assert after[ALLOCATED] == base[ALLOCATED]
        assert after[PEAK] >= base[ALLOCATED] + MiB
        assert mine.max_memory_allocated() == base[ALLOCATED]


def test_bad_devices_raise_and_the_session_goes_on(session: td.Session) -> None:
    with pytest.raises(td.Error, match=r"unknown device 'cuda:7' \(this daemon serves: cpu"):
        session.memory_stats("cuda:7")
    with pytest.raises(td.Error, match="GetMemoryStats.device has 4096 bytes; the limit is 128"):
        session.memory_stats("d" * 4096)
    x = td.ones(4)
    assert session.memory_stats("cpu")[ALLOCATED] >= 512
    assert x.sum().item() == 4


def test_a_tenant_without_admin_rights_reads_its_own(tmp_path: object) -> None:
    tokens = os.path.join(str(tmp_path), "tokens")
    with open(tokens, "w") as f:
        f.write("bob tok-bob\n")
    os.chmod(tokens, 0o600)
    with running_daemon(f"--tokens_file={tokens}") as address:
        with td.connect(address, token="tok-bob") as s:
            before = s.memory_allocated()
            x = td.ones(256, 1024)
            assert s.memory_allocated() == before + MiB
            del x
            assert s.memory_allocated() == before


def test_reported_fallbacks_reach_admin_and_the_profiler(session: td.Session,
                                                         admin: object) -> None:
    session.note_fallback("aten.cummax.default")  # before profiling: the session's count only
    with td.profiler.profile(session) as prof:
        session.note_fallback("aten.cummax.default", 2)
        session.note_fallback("aten.index.Tensor")
        assert (td.ones(3) + 1).sum().item() == 6
    assert prof.fallbacks == {"aten.cummax.default": 2, "aten.index.Tensor": 1}
    table = prof.key_averages().table()
    assert "fallbacks): 3 call(s)" in table and "aten.index.Tensor" in table
    session.note_fallback("x" * 300)  # cut to the daemon's 128 bytes
    session.synchronize()
    info = session_info(admin, session.session_id)
    assert dict(info.fallbacks) == {"aten.cummax.default": 3, "aten.index.Tensor": 1,
                                    "x" * 128: 1}
    with pytest.raises(ValueError, match="empty"):
        session.note_fallback("")
