"""Shared buffers (``tensord.SharedBuffer``, ``tensord.empty_shared``; docs/protocol.md "Shared
buffers") against the real daemon with real memfds: uploads from and downloads into shared arrays
are one Put/Get naming the buffer and round-trip every dtype and odd sizes; ``numpy(out=)`` also
works on plain arrays; freed buffers and ended sessions are gone (also as the Admin service
reports them); quotas, caps and fallbacks."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

import tensord as td
from conftest import running_daemon, session_info
from tensord import _shm
from tensord._proto import admin_pb2
from tensord._local_transport import LocalTransport

# (numpy dtype, shape): sizes over _shm.MIN_BYTES that are not multiples of pages
CASES = [(np.float32, (3, 100003)), (np.float64, (517, 1031)), (np.int64, (70001,)),
         (np.int32, (65537, 2)), (np.int8, (2, 3, 50021)), (np.uint8, ((256 << 10) + 3,)),
         (np.bool_, (300007,)), (np.float16, (1, 150001))]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Counts the one-copy Puts and Gets (``LocalTransport``'s: a Put naming a shared buffer
    names it as (region, offset), a Put by cross-memory attach as an address)."""
    counts = {"put": 0, "get": 0}
    real_put, real_get = LocalTransport._put_in_place_locked, LocalTransport._get_shared_locked

    def put(self, *args):
        counts["put"] += isinstance(args[2], tuple)
        return real_put(self, *args)

    def get(self, *args):
        counts["get"] += 1
        return real_get(self, *args)

    monkeypatch.setattr(LocalTransport, "_put_in_place_locked", put)
    monkeypatch.setattr(LocalTransport, "_get_shared_locked", get)
    return counts


def _values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype,shape", CASES, ids=[np.dtype(c[0]).name for c in CASES])
def test_round_trip_is_one_put_and_one_get(daemon: str, calls: dict, dtype, shape) -> None:
    with td.connect(daemon, shm=True):
        a = td.empty_shared(shape, dtype=dtype)
        assert a.dtype == dtype and a.shape == shape and not a.any()  # starts zeroed
        want = _values(dtype, shape, a.size)
        a[...] = want
        t = td.tensor(a)
        a[...] = 0  # the daemon has its copy once tensor() returned
        assert calls["put"] == 1
        out = td.empty_shared(shape, dtype=dtype)
        assert t.numpy(out=out) is out
        assert calls["get"] == 1
        assert out.tobytes() == want.tobytes()
        assert t.numpy().tobytes() == want.tobytes()  # the tensor itself, ordinary path
        assert (t.sum() if dtype != np.bool_ else t.any()).item() is not None


def test_views_offsets_small_and_computed(daemon: str, calls: dict) -> None:
    with td.connect(daemon, shm=True):
        buf = td.SharedBuffer(4 << 20)
        assert buf.is_shared and buf.region > 0
        a = buf.numpy((1 << 18) + 5, td.float32, offset=64)
        a[:] = np.arange(a.size, dtype=np.float32)
        t = td.from_numpy(a)
        assert calls["put"] == 1
        doubled = buf.numpy(a.size, np.float32, offset=2 << 20)
        (t * 2).numpy(out=doubled)  # downloaded before its Ack came
        assert calls["get"] == 1
        assert np.array_equal(doubled, np.arange(a.size, dtype=np.float32) * 2)
        small = buf.numpy(1000, np.float32)  # under 256 KiB: the ordinary path
        td.tensor(small).numpy(out=small)
        assert calls == {"put": 1, "get": 1}
        with pytest.raises(ValueError, match="does not fit"):
            buf.numpy(1 << 20, np.float64)
        with pytest.raises(TypeError, match="bfloat16"):
            buf.numpy(4, td.bfloat16)


def test_numpy_out_errors_and_plain_arrays(daemon: str) -> None:
    with td.connect(daemon, shm=True):
        a = np.arange(300_000, dtype=np.float32).reshape(1000, 300)
        t = td.tensor(a)
        out = np.empty((1000, 300), np.float32)
        assert np.array_equal(t.numpy(out=out), a)  # through the session's region
        small = td.tensor(a[:2])
        out = np.empty((2, 300), np.float32)
        assert np.array_equal(small.numpy(out=out), a[:2])  # on the stream
        with pytest.raises(ValueError, match="shape"):
            t.numpy(out=np.empty((300, 1000), np.float32))
        with pytest.raises(ValueError, match="dtype"):
            t.numpy(out=np.empty((1000, 300), np.float64))
        with pytest.raises(ValueError, match="C-contiguous"):
            t.numpy(out=np.empty((300, 1000), np.float32).T)
        h = td.tensor(a, dtype=td.bfloat16)
        hb = np.empty((1000, 300), np.float32)
        assert np.array_equal(h.numpy(out=hb), h.numpy())
        bad = td.ones(2, 3) @ td.ones(2, 3)
        with pytest.raises(td.ShapeError):
            bad.numpy(out=np.empty((2, 3), np.float32))
        assert np.array_equal(t.numpy(), a)  # the session goes on


def test_free_then_use_and_session_end(daemon: str, calls: dict,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    described = []
    real_map = _shm.map_region

    def spy(desc, populate=False):
        described.append(type(desc).FromString(desc.SerializeToString()))
        return real_map(desc, populate)

    monkeypatch.setattr(_shm, "map_region", spy)
    with td.connect(daemon, shm=True):
        buf = td.SharedBuffer(1 << 20)
        kept = td.SharedBuffer(1 << 20)
        freed_desc, kept_desc = described[-2], described[-1]
        a = buf.numpy(1 << 18, np.float32)
        a[:] = 1.5
        buf.free()
        assert not buf.is_shared
        with pytest.raises(ValueError, match="freed"):
            buf.numpy(4)
        td.synchronize()  # the Release has run
        assert real_map(freed_desc) is None  # the daemon's side is gone
        t = td.tensor(a)  # plain memory now: the ordinary path
        assert calls["put"] == 0 and np.all(t.numpy() == 1.5)
        assert real_map(kept_desc) is not None
        del kept
    assert real_map(kept_desc) is None  # the ended session's buffers are gone


def test_admin_reports_buffers_per_session_and_in_total(daemon: str, admin) -> None:
    def shared_stats():
        return admin.MemoryStats(admin_pb2.MemoryStatsRequest()).shared_buffers

    with td.connect(daemon, shm=True) as s:
        a = td.SharedBuffer(3 << 20)
        b = td.SharedBuffer(1 << 20)
        info = session_info(admin, s.session_id)
        assert (info.shared_buffers, info.shared_buffer_bytes) == (2, 4 << 20)
        assert info.memory_bytes["cpu"] < 4 << 20  # not the cpu allocator's memory
        stats = shared_stats()
        assert stats.session_count[s.session_id] == 2
        assert stats.session_bytes[s.session_id] == 4 << 20
        assert stats.count >= 2 and stats.bytes >= 4 << 20
        b.free()
        td.synchronize()  # the Release has run
        info = session_info(admin, s.session_id)
        assert (info.shared_buffers, info.shared_buffer_bytes) == (1, 3 << 20)
        assert shared_stats().session_bytes[s.session_id] == 3 << 20
        cpu = admin.MemoryStats(admin_pb2.MemoryStatsRequest(device="cpu"))
        assert cpu.HasField("shared_buffers")  # cpu's quota counts them
        del a
    assert s.session_id not in shared_stats().session_bytes  # the session's end freed it


def test_dropped_buffer_is_released(daemon: str) -> None:
    with td.connect(daemon, shm=True) as s:
        a = td.empty_shared(1 << 18)
        assert len(s._shared_ranges) == 1
        del a  # the array held the buffer; both gone now
        assert len(s._shared_ranges) == 0
        td.synchronize()
        assert not s._released_shared


def test_plain_memory_without_shared_memory(daemon: str, calls: dict,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for kwargs in ({"shm": False}, {}):
        if not kwargs:
            monkeypatch.setenv("TENSORD_SHM", "0")
        with td.connect(daemon, **kwargs) as s:
            assert not s._transport.shares_memory
            buf = td.SharedBuffer(1 << 20)
            assert not buf.is_shared and buf.region == 0
            a = buf.numpy((1 << 18,), np.float32)
            a[:] = np.arange(a.size)
            out = td.empty_shared(1 << 18)
            td.tensor(a).numpy(out=out)
            assert np.array_equal(out, a)
    assert calls == {"put": 0, "get": 0}


def test_quota_and_caps() -> None:
    tokens = os.path.join(tempfile.mkdtemp(prefix="tensord-tokens-"), "tokens")
    with open(tokens, "w") as f:
        f.write("alice tok-alice quota=64MiB\n")
    with running_daemon(f"--tokens_file={tokens}", "--shared_buffer_bytes=100000000") as address:
        with td.connect(address, token="tok-alice", shm=True):
            big = td.SharedBuffer(48 << 20)
            with pytest.raises(td.OutOfMemoryError, match="quota"):
                td.SharedBuffer(32 << 20)
            with pytest.raises(td.OutOfMemoryError, match="quota"):
                td.zeros(32 << 18).numpy()  # tensors see the buffer in the quota
            big.free()
            again = td.SharedBuffer(32 << 20)  # the Release goes first: room again
            with pytest.raises(td.OutOfMemoryError, match="a session may have"):
                td.SharedBuffer(96 << 20)  # over --shared_buffer_bytes
            with pytest.raises(ValueError):
                td.SharedBuffer(0)
            assert again.is_shared
            t = td.tensor(np.ones(4, np.float32))
            assert t.sum().item() == 4  # the session goes on
        with td.connect(address, token="tok-alice", shm=True):
            assert td.SharedBuffer(60 << 20).is_shared  # the ended session's bytes came back


def test_turned_off_by_the_daemon() -> None:
    with running_daemon("--shared_buffer_bytes=0") as address:
        with td.connect(address, shm=True):
            with pytest.raises(td.Error, match="--shared_buffer_bytes=0"):
                td.SharedBuffer(1 << 20)
            assert td.tensor([1.0, 2.0]).sum().item() == 3.0
