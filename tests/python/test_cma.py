"""Uploads by cross-memory attach (docs/protocol.md "Cross-memory attach"; ``_cma.py``,
``_shared.py``) against the real daemon: on a same-host session, once this process has bound
the session to itself (the daemon asks the kernel who connected to its binding socket) and a
4-byte probe worked, arrays of 1 MiB or more are read by the daemon straight out of this
process; values, dtypes and ``requires_grad`` arrive as sent; smaller or non-contiguous arrays,
``cma=False``, a daemon run ``--cma=false`` and a binding the daemon refuses all take the
shared-memory region instead, with the same values."""

from __future__ import annotations

import gc
import os
from typing import Iterator

import numpy as np
import pytest

import tensord as td
from tensord import _cma
from conftest import running_daemon
from tensord._local_transport import LocalTransport

BIG = 3 << 20  # bytes: over the 1 MiB threshold


@pytest.fixture
def cma_puts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """The Puts sent by cross-memory attach: (address, nbytes) each (the probe is a Get).
    No cyclic collections meanwhile: an upload takes cross-memory attach only when the daemon
    has acknowledged everything sent, and Releases of an earlier test's collected tensors would
    make it rightly take another path (test_resume.py)."""
    seen = []
    real = LocalTransport._put_in_place_locked

    def spy(self, handle, header, where, nbytes):
        if not isinstance(where, tuple):  # an address, not a shared buffer's (region, offset)
            seen.append((where, nbytes))
        return real(self, handle, header, where, nbytes)

    monkeypatch.setattr(LocalTransport, "_put_in_place_locked", spy)
    gc.collect()
    gc.disable()
    yield seen
    gc.enable()


def _random(n: int, seed: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def test_big_arrays_are_read_by_the_daemon(daemon: str, cma_puts: list) -> None:
    with td.connect(daemon) as s:
        for i, dtype in enumerate((np.float32, np.float64, np.int64, np.float16)):
            a = _random(BIG // np.dtype(dtype).itemsize + 7, i, dtype).reshape(-1, 1)
            t = td.tensor(a)
            assert t.dtype.name == np.dtype(dtype).name
            np.testing.assert_array_equal(t.numpy(), a)
            assert (a.ctypes.data, a.nbytes) in cma_puts
        assert s._transport.cma_usable()
        # A forked child holding the session must not use it (the daemon would read the parent).
        child = os.fork()
        if child == 0:
            os._exit(1 if s._transport.cma_usable() else 0)
        _, status = os.waitpid(child, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        # Below the threshold, and a non-contiguous array (its contiguous copy is what is
        # read, so it goes by cross-memory attach too, from another address).
        n = len(cma_puts)
        small = _random((1 << 20) // 4 - 1, 9)
        np.testing.assert_array_equal(td.tensor(small).numpy(), small)
        assert len(cma_puts) == n
        strided = _random(2 * BIG // 4, 10)[::2]
        np.testing.assert_array_equal(td.tensor(strided).numpy(), strided)
        assert len(cma_puts) == n + 1 and cma_puts[-1][0] != strided.ctypes.data


def test_requires_grad_travels_with_the_put(daemon: str, cma_puts: list) -> None:
    with td.connect(daemon) as s:
        a = _random(BIG // 4, 3)
        t = td.tensor(a, requires_grad=True)
        (t * 3.0).sum().backward()
        np.testing.assert_array_equal(t.grad.numpy(), np.full_like(a, 3.0))
        assert (a.ctypes.data, a.nbytes) in cma_puts


def test_turned_off_by_the_keyword(daemon: str, cma_puts: list) -> None:
    with td.connect(daemon, cma=False) as s:
        a = _random(BIG // 4, 4)
        np.testing.assert_array_equal(td.tensor(a).numpy(), a)
        assert not cma_puts
        assert not s._transport.cma_usable()
        assert s._transport.shares_memory  # the region carried it


def test_daemon_without_cross_memory_attach(cma_puts: list) -> None:
    with running_daemon("--cma=false") as address, td.connect(address) as s:
        assert not s.welcome.cma
        a = _random(BIG // 4, 5)
        np.testing.assert_array_equal(td.tensor(a).numpy(), a)
        assert not cma_puts and not s._transport.cma_usable()


def test_a_ticket_binds_once(daemon: str) -> None:
    with td.connect(daemon) as s:
        assert s.welcome.cma and s._transport.cma.bound
        assert s.welcome.cma_socket.startswith("@tensord-cma-")
        assert not _cma.bind(s.welcome)  # spent: the daemon answers "refused"


def test_a_refused_binding_falls_back_to_the_region(daemon: str, cma_puts: list,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    answers = []
    real = _cma.bind

    def wrong_ticket(welcome):  # the daemon refuses a ticket no session holds
        forged = type(welcome)()
        forged.CopyFrom(welcome)
        forged.cma_ticket = "0" * _cma.TICKET_BYTES
        answers.append(real(forged))
        return answers[-1]

    monkeypatch.setattr(_cma, "bind", wrong_ticket)
    with td.connect(daemon) as s:
        assert s.welcome.cma and answers == [False]
        a = _random(BIG // 4, 6)
        np.testing.assert_array_equal(td.tensor(a).numpy(), a)
        assert not cma_puts
        assert not s._transport.cma_usable()
        b = _random(BIG // 4, 7)
        np.testing.assert_array_equal(td.tensor(b).numpy(), b)
        assert not cma_puts
        s.synchronize()  # no error left behind


def test_uploads_behind_queued_work_take_the_staging_buffer(daemon: str,
                                                           cma_puts: list) -> None:
    # A CMA upload returns only once the daemon read it, after everything queued before it; with
    # an op still unacknowledged (a flush interval of a minute keeps it unsent) the upload takes
    # the staging buffer (Note [Staging buffer]) and returns at once.
    with td.connect(daemon, flush_interval=60.0) as s:
        assert s._transport.cma_usable()
        x = td.tensor(_random(64, 8))
        y = x * 2.0  # queued
        a = _random(BIG // 4, 9)
        t = td.tensor(a)
        assert not cma_puts
        np.testing.assert_array_equal(t.numpy(), a)
        np.testing.assert_array_equal(y.numpy(), x.numpy() * 2.0)
        b = _random(BIG // 4, 10)  # caught up now: by cross-memory attach
        np.testing.assert_array_equal(td.tensor(b).numpy(), b)
        assert cma_puts == [(b.ctypes.data, b.nbytes)]
