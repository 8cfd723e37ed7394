"""Batches through the session region's command ring (Note [Python command ring] in
``_command_ring.py``, docs/protocol.md "Command ring") against the real daemon: values match
PyTorch, frames too big for the ring go on the stream without reordering anything, a malformed
record ends only its own session with a message naming the ring, and a daemon started with
``--command_ring=false`` is used through the stream. Needs the ``_ring`` C module (the
``c_module`` mark: c_modules.py says when its absence skips and when it fails)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tensord as td
from conftest import running_daemon
from tensord import _command_ring

pytestmark = pytest.mark.c_module("_ring")


def _ring(s: td.Session) -> _command_ring.CommandRing:
    assert s._transport.shares_memory and s._transport.region.ring is not None, "the daemon offered no ring"
    return s._transport.region.ring


def test_values_through_the_ring_match_pytorch(daemon: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 4)).astype(np.float32)
    with td.connect(daemon, shm=True) as s:
        ring = _ring(s)
        x, y = td.tensor(a), td.tensor(b)
        got = ((x @ y).relu() * 3 - 1).sum(dim=0)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        want = ((ta @ tb).relu() * 3 - 1).sum(dim=0)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        acc = td.zeros(1)
        for i in range(50):  # a value read per step: each batch through the ring
            acc = acc + float(i)
            assert acc.item() == pytest.approx(i * (i + 1) / 2)
        assert ring.frames >= 50 and ring.stream_frames == 0


def test_held_acks_describe_every_result(daemon: str) -> None:
    # Note [Held acks]: the Acks of batches with a value read come merged, their TensorMetas and
    # their packed metas (Note [Packed metas]) concatenated; every result is described once
    with td.connect(daemon, shm=True) as s:
        ring = _ring(s)
        kept = []
        acc = td.zeros(1)
        for i in range(40):
            acc = acc + 1.0
            w = td.ones(i % 5 + 1, 2, requires_grad=True)
            kept.append((td.ones(i % 5 + 1, 2) * i, w, w * 2))
            assert acc.item() == i + 1  # answered through the mailbox: the Acks are held
        for i, (t, w, g) in enumerate(kept):
            assert (t.shape, t.dtype, t.is_leaf, t.requires_grad) == ((i % 5 + 1, 2),
                                                                      td.float32, True, False)
            assert (w.shape, w.is_leaf, w.requires_grad, w.grad_fn) == (t.shape, True, True,
                                                                        None)
            assert (g.shape, g.is_leaf, g.grad_fn.name()) == (t.shape, False, "MulBackward0")
            assert t.numpy().tolist() == [[float(i)] * 2] * (i % 5 + 1)
        assert ring.frames >= 40 and s._packed


def test_frames_too_big_for_the_ring_keep_their_order(daemon: str) -> None:
    # A 2 MiB region gets a 128 KiB ring: 96 KiB uploads (inline in their frame, below the
    # staging threshold) go on the stream, the small ops around them through the ring.
    with running_daemon("--shm_bytes=2097152") as address:
        with td.connect(address, shm=True, cma=False) as s:
            ring = _ring(s)
            assert ring.size == 128 << 10
            rng = np.random.default_rng(3)
            total = torch.zeros(24 << 10)
            acc = td.zeros(24 << 10)
            for _ in range(6):
                v = rng.standard_normal(24 << 10).astype(np.float32)
                acc = (acc + td.tensor(v)) * 0.5
                total = (total + torch.from_numpy(v)) * 0.5
            np.testing.assert_allclose(acc.numpy(), total.numpy(), rtol=1e-6)
            assert ring.stream_frames >= 6 and ring.frames > 0


def test_a_malformed_record_ends_only_its_session(daemon: str) -> None:
    with td.connect(daemon, shm=True):  # the bystander
        x = td.tensor(np.arange(4, dtype=np.float32))
        with td.connect(daemon, shm=True) as s:
            ring = _ring(s)
            assert (td.ones(2) * 2).sum().item() == 4.0
            with s._lock:  # what a confused client could write: not a ClientFrame
                assert _command_ring._ring.put(ring.control, ring.records, ring.size,
                                               b"\xff\xff\xff\xff", 1000000)
            with pytest.raises(td.Error, match="command ring: the record at byte"):
                (td.ones(1) + 1).item()
        assert (x * 2).sum().item() == 12.0  # the bystander's session goes on


def test_a_daemon_without_rings_is_used_through_the_stream() -> None:
    with running_daemon("--command_ring=false") as address:
        with td.connect(address, shm=True) as s:
            assert s._transport.shares_memory and s._transport.region.ring is None
            assert (td.arange(5) * 3).sum().item() == 30


def test_put_refuses_frames_over_half_the_ring(daemon: str) -> None:
    with td.connect(daemon, shm=True) as s:
        ring = _ring(s)
        with pytest.raises(ValueError, match="over half"):
            _command_ring._ring.put(ring.control, ring.records, ring.size,
                                    bytes(ring.size // 2), 0)
