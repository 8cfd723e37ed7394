"""``LocalTransport`` alone (Note [Python transports] in ``tensord/_transport.py``): which path
each upload and download takes, the values PyTorch computes from them, and what a resume
keeps. Against the real daemon on this host (the transport needs a mapped region)."""

from __future__ import annotations

import gc
from typing import Iterator, List

import numpy as np
import pytest
import torch

import tensord as td
from tensord import _dtype
from tensord._staging import Staging
from tensord._local_transport import LocalTransport
from tensord._remote_transport import RemoteTransport
from tensord._transport import PutHeader

BIG = 3 << 20  # bytes: over every threshold of the fast paths


def _random(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[List[str]]:
    """The transport paths taken, in order. No cyclic collections meanwhile: an upload goes by
    cross-memory attach only when the daemon has acknowledged everything (test_cma.py)."""
    seen: List[str] = []

    def spy(owner, name, label):
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            where = args[3] if name == "_put_in_place_locked" else None
            seen.append(label if where is None else
                        "shared" if isinstance(where, tuple) else "cma")
            return real(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)

    spy(LocalTransport, "_put_in_place_locked", "")
    spy(LocalTransport, "_upload_stream_locked", "stream")
    spy(LocalTransport, "_get_shared_locked", "shared get")
    spy(LocalTransport, "_get_on_stream_locked", "stream get")
    spy(Staging, "upload_locked", "staging")
    spy(Staging, "download_locked", "staging get")
    gc.collect()
    gc.disable()
    yield seen
    gc.enable()


def test_a_same_host_session_is_local(daemon: str) -> None:
    with td.connect(daemon) as s:
        assert isinstance(s._transport, LocalTransport) and s._transport.shares_memory
    with td.connect(daemon, shm=False) as s:  # as on another host
        assert isinstance(s._transport, RemoteTransport) and not s._transport.shares_memory


def test_uploads_take_the_fastest_path_that_applies(daemon: str, paths: List[str]) -> None:
    a = _random(BIG // 4, 1)
    with td.connect(daemon, flush_interval=600.0) as s:
        s.synchronize()  # caught up: cross-memory attach where it works
        x = td.tensor(a)
        fast = "cma" if s._transport.cma_usable() else "staging"
        pending = x * 2.0  # queued, not acknowledged: the staging buffer returns at once
        y = td.tensor(a[::-1].copy())
        shared = td.empty_shared(a.shape)
        shared[:] = a
        z = td.tensor(shared)  # one Put naming the buffer
        mid = td.tensor(a[:40_000])  # 160 KB: over a batch's small chunk, under staging's
        tiny = td.tensor(a[:10])  # an entry of the open batch: no transport path
        assert paths == [fast, "staging", "shared", "stream"]
        want = torch.from_numpy(a)
        for got, ref in ((x, want), (pending, want * 2.0), (y, want.flip(0)), (z, want),
                         (mid, want[:40_000]), (tiny, want[:10])):
            np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_downloads_take_the_fastest_path_that_applies(daemon: str, paths: List[str]) -> None:
    a = _random(BIG // 4, 2)
    want = torch.from_numpy(a) * 3.0
    with td.connect(daemon, flush_interval=600.0) as s:
        x = td.tensor(a)
        y = x * 3.0
        paths.clear()
        np.testing.assert_array_equal(y.numpy(), want.numpy())  # no Ack yet: size unknown
        assert paths == ["staging get"]
        assert y.shape == (a.size,)  # known now
        np.testing.assert_array_equal(y.numpy(), want.numpy())  # the download cache's buffer
        assert paths[1:] == ["shared get"]
        out = td.empty_shared(a.shape)
        assert y.numpy(out=out) is out
        np.testing.assert_array_equal(out, want.numpy())
        assert paths[2:] == ["shared get"]
        plain = np.empty_like(a)
        y.numpy(out=plain)  # not a shared buffer: the staging buffer
        np.testing.assert_array_equal(plain, want.numpy())
        assert paths[3:] == ["staging get"]
        answers = s._transport.region.answers
        value = (y[:1] + 1.0).item()  # a value read: staging and the mailbox, else the stream
        assert value == pytest.approx(float(want[0]) + 1.0, rel=1e-6)
        mailbox = s._transport.region.word != 0
        assert paths[4:] == ["staging get" if mailbox else "stream get"]
        if mailbox and s._transport.region.ring is not None:  # then answered there only
            # the daemon announced the Get into the staging buffer (a shared buffer) there
            assert s._transport.region.answers == answers + 1
        small_out = np.empty(1000, np.float32)
        y[:1000].numpy(out=small_out)  # small, into memory of its own: the stream
        np.testing.assert_array_equal(small_out, want[:1000].numpy())
        assert paths[5:] == ["stream get"]


def test_a_resume_keeps_the_region_or_refuses_a_changed_one(daemon: str) -> None:
    with td.connect(daemon) as s:
        t = s._transport
        region = t.region
        same = type(s.welcome)()
        same.CopyFrom(s.welcome)
        same.resumed_applied_seq = s._seq
        changed = type(s.welcome)()
        changed.CopyFrom(same)
        changed.shm.nonce = b"x" * len(changed.shm.nonce)  # a region this process cannot map
        gone = type(s.welcome)()
        gone.CopyFrom(same)
        gone.ClearField("shm")
        with s._lock:
            assert t.resumed(same, False) == "" and t.region is region
            assert "cannot be mapped" in t.resumed(changed, False)
            assert "cannot be mapped" in t.resumed(gone, False)
            s._busy = -1  # a transfer under way (it may wait in the mailbox)
            assert "in flight" in t.resumed(changed, False)
            s._busy = None
            assert t.region is region
        np.testing.assert_array_equal(td.tensor(np.arange(5.0)).numpy(), np.arange(5.0))


def test_nothing_waits_on_the_mailbox_when_no_read_asked_it(daemon: str) -> None:
    with td.connect(daemon) as s:
        t = s._transport
        with s._lock:
            t.answered(12345)  # not the mailbox's request: nothing to wake
            t.ended()
        assert t.region.notify_rid == 0
        assert (td.tensor([2.0]) * 4.0).item() == 8.0


def test_the_region_holds_no_payload(daemon: str) -> None:
    """The session region is its nonce page, mailbox and ring only (bytes go through shared
    buffers): a Put naming region 0 is refused, its handle poisoned, and the session goes on."""
    with td.connect(daemon) as s:
        desc = s.welcome.shm
        assert desc.data_offset == desc.size
        header = PutHeader(_dtype.float32.proto, (4,), "cpu", False, "")
        with s._lock:
            handle = s._new_handle_locked()
            s._transport._put_in_place_locked(handle, header, (0, desc.data_offset), 16)
        with pytest.raises(td.InvalidArgumentError, match="region 0 .* holds no payload"):
            s.synchronize()
        s.release(handle)
        assert (td.tensor([2.0]) * 4.0).item() == 8.0
