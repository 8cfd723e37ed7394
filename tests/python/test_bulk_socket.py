"""The bulk socket (docs/protocol.md "Bulk socket"; ``_bulk.py``) against the real daemon:
without a shared-memory region, transfers of 1 MiB or more move their bytes on a TCP socket
beside the stream. Values are checked against the arrays sent and against PyTorch; small
transfers, ``bulk=False``, ``TENSORD_BULK=0`` and a daemon without bulk sockets take the stream
with the same values; a socket that breaks fails one transfer with a clear error and the session
goes on over the stream (test_resume.py: reads in several threads across a cut stream)."""

from __future__ import annotations

import socket
from typing import Iterator, List

import numpy as np
import pytest
import torch

import tensord as td
from conftest import running_daemon
from tensord._remote_transport import RemoteTransport

BIG = 3 << 20  # bytes: over the 1 MiB threshold


@pytest.fixture
def bulk_calls(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """"put"/"get" for each transfer that went to the socket."""
    seen: List[str] = []
    real_put, real_get = RemoteTransport._put_bulk_locked, RemoteTransport._get_bulk_locked

    def put(self, raw, handle, header):
        seen.append("put")
        return real_put(self, raw, handle, header)

    def get(self, handle, site, nbytes, out):
        seen.append("get")
        return real_get(self, handle, site, nbytes, out)

    monkeypatch.setattr(RemoteTransport, "_put_bulk_locked", put)
    monkeypatch.setattr(RemoteTransport, "_get_bulk_locked", get)
    return seen


@pytest.fixture
def remote(daemon: str) -> Iterator[td.Session]:
    """A session as a client on another host has it: no shared-memory region."""
    with td.connect(daemon, shm=False) as s:
        yield s


def _random(n: int, seed: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def test_big_transfers_go_on_the_socket(remote: td.Session, bulk_calls: List[str]) -> None:
    a = _random(BIG // 4 + 3, 1)  # an odd tail
    x = td.tensor(a)
    assert bulk_calls == ["put"]
    assert remote._transport.lanes.state is True
    np.testing.assert_array_equal(x.numpy(), a)  # size known: asked on the socket
    y = x * 2 + 1  # a fresh result: its size is not known yet, the daemon decides
    want = (torch.from_numpy(a) * 2 + 1).numpy()
    np.testing.assert_array_equal(y.numpy(), want)
    out = np.empty_like(a)
    assert y.numpy(out=out) is out
    np.testing.assert_array_equal(out, want)
    assert bulk_calls == ["put", "get", "get", "get"]


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32, np.uint8, np.bool_])
def test_dtypes_arrive_as_sent(remote: td.Session, bulk_calls: List[str], dtype) -> None:
    rng = np.random.default_rng(7)
    n = (BIG // np.dtype(dtype).itemsize) + 5
    a = (rng.integers(0, 200, n) > 100 if dtype is np.bool_
         else rng.integers(-100 if dtype not in (np.uint8,) else 0, 100, n).astype(dtype)
         if np.issubdtype(dtype, np.integer) else rng.standard_normal(n).astype(dtype))
    x = td.tensor(a)
    back = x.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    assert bulk_calls == ["put", "get"]


def test_gradients_of_uploaded_leaves_match_torch(remote: td.Session) -> None:
    a = _random(512 * 1024, 3).reshape(512, 1024)  # 2 MiB
    w = _random(1024 * 256, 4).reshape(1024, 256)  # 1 MiB
    x = td.tensor(a, requires_grad=True)
    wt = td.tensor(w, requires_grad=True)
    (x @ wt).relu().sum().backward()
    xr = torch.from_numpy(a).requires_grad_()
    wr = torch.from_numpy(w).requires_grad_()
    (xr @ wr).relu().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(wt.grad.numpy(), wr.grad.numpy(), rtol=1e-5, atol=1e-3)


def test_small_transfers_stay_on_the_stream(remote: td.Session, bulk_calls: List[str]) -> None:
    a = _random(1000, 5)
    x = td.tensor(a)
    out = np.empty_like(a)  # the size known, and small
    np.testing.assert_array_equal(x.numpy(out=out), a)
    assert abs((x * 1).sum().item() - float(a.astype(np.float64).sum())) < 1e-3
    assert bulk_calls == []
    assert remote._transport.lanes.state is None  # never connected


def test_a_fresh_small_result_is_answered_on_the_stream(remote: td.Session,
                                                        bulk_calls: List[str]) -> None:
    td.tensor(_random(BIG // 4, 6))  # connects the socket
    a = _random(100, 8)
    y = td.tensor(a) + 1  # size not known: asked with bulk, answered on the stream
    np.testing.assert_array_equal(y.numpy(), a + 1)
    assert bulk_calls == ["put", "get"]


@pytest.mark.parametrize("how", ["option", "environment"])
def test_turned_off_the_stream_carries_them(daemon: str, bulk_calls: List[str], how: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "environment":
        monkeypatch.setenv("TENSORD_BULK", "0")
    kwargs = {"bulk": False} if how == "option" else {}
    with td.connect(daemon, shm=False, **kwargs) as s:
        a = _random(BIG // 4, 9)
        np.testing.assert_array_equal((td.tensor(a) - 1).numpy(), a - 1)
        assert bulk_calls == []
        assert not s._transport.lanes.state


def test_a_daemon_without_bulk_sockets(bulk_calls: List[str]) -> None:
    with running_daemon("--bulk_port=-1") as address:
        with td.connect(address, shm=False) as s:
            assert s.welcome.bulk_port == 0
            a = _random(BIG // 4, 10)
            np.testing.assert_array_equal((td.tensor(a) * 3).numpy(), a * 3)
            assert bulk_calls == []


def test_a_broken_socket_fails_one_transfer_then_the_stream_serves(
        remote: td.Session) -> None:
    a = _random(BIG // 4, 11)
    x = td.tensor(a)  # connects
    remote._transport.lanes.socks[0].shutdown(socket.SHUT_RDWR)  # as if the network dropped it
    with pytest.raises(td.Error, match="upload of handle .*: the bulk socket to tensord broke"):
        td.tensor(a)
    assert remote._transport.lanes.state is False
    b = _random(BIG // 4, 12)
    y = td.tensor(b)  # the stream now
    np.testing.assert_array_equal((x + y).numpy(), a + b)
