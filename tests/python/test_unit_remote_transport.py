"""``RemoteTransport`` alone (Note [Python transports] in ``tensord/_transport.py``): which
path each upload and download takes (the bulk socket's lanes, else the stream's chunks), the
fallback when the lanes cannot connect, and the values PyTorch computes from them. Against the
real daemon, the session told it is remote (``shm=False``)."""

from __future__ import annotations

import socket
from typing import List

import numpy as np
import pytest
import torch

import tensord as td
from tensord._remote_transport import RemoteTransport
from tensord._transport import Transport

BIG = 3 << 20  # bytes: over the bulk socket's threshold


def _random(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The transport paths taken, in order."""
    seen: List[str] = []
    for name, label in (("_put_bulk_locked", "bulk"), ("_upload_stream_locked", "stream"),
                        ("_get_bulk_locked", "bulk get"), ("_get_on_stream_locked", "stream get")):
        real = getattr(RemoteTransport, name)

        def wrapper(*args, _real=real, _label=label, **kwargs):
            seen.append(_label)
            return _real(*args, **kwargs)
        monkeypatch.setattr(RemoteTransport, name, wrapper)
    return seen


def _round_trips(s: td.Session, a: np.ndarray) -> None:
    """Uploads of every size class and their downloads, checked against PyTorch."""
    want = torch.from_numpy(a)
    x = td.tensor(a)  # big
    mid = td.tensor(a[:40_000])  # over a batch's small chunk, under the socket's threshold
    y = x * 2.0 - 1.0  # a fresh result: the daemon picks the way for a size not known yet
    np.testing.assert_array_equal(y.numpy(), (want * 2.0 - 1.0).numpy())
    np.testing.assert_array_equal(x.numpy(), a)  # size known
    np.testing.assert_array_equal(mid.numpy(), a[:40_000])
    assert (x[:1] * 4.0).item() == pytest.approx(float(want[0]) * 4.0, rel=1e-6)


def test_a_session_without_a_region_is_remote(daemon: str) -> None:
    with td.connect(daemon, shm=False) as s:
        t = s._transport
        assert isinstance(t, RemoteTransport) and not t.shares_memory
        assert t.lanes.wanted and t.lanes.state is None  # not connected before a big transfer
    assert t.lanes.state is False and t.lanes.connected == 0  # closed with the session
    for name in ("upload", "download"):  # the interface's two abstract methods
        assert getattr(RemoteTransport, name) is not getattr(Transport, name)


def test_big_transfers_take_the_lanes(daemon: str, paths: List[str]) -> None:
    with td.connect(daemon, shm=False) as s:
        _round_trips(s, _random(BIG // 4, 1))
        assert s._transport.lanes.state is True
    # x (bulk), mid (stream); y unknown size (bulk get: the daemon answers on the lanes),
    # x known and big (bulk get), mid (stream get), the item() (stream get)
    assert paths == ["bulk", "stream", "bulk get", "bulk get", "stream get", "stream get"]


def test_without_the_socket_everything_takes_the_stream(daemon: str, paths: List[str]) -> None:
    with td.connect(daemon, shm=False, bulk=False) as s:
        assert not s._transport.lanes.wanted and s._transport.cache is None
        _round_trips(s, _random(BIG // 4, 2))
        assert not s._transport.lanes.state and s._transport.lanes.connected == 0
    assert paths == ["stream", "stream"] + ["stream get"] * 4


def test_lanes_that_cannot_connect_fall_back_to_the_stream(daemon: str,
                                                           paths: List[str]) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with td.connect(daemon, shm=False) as s:
        t = s._transport
        w = type(s.welcome)()
        w.CopyFrom(s.welcome)
        w.bulk_port = port
        t._welcome = w
        _round_trips(s, _random(BIG // 4, 3))
        assert t.lanes.state is False and t.lanes.connected == 0
    assert paths == ["stream", "stream"] + ["stream get"] * 4
