"""Streams, events and TF32 on the real daemon (docs/protocol.md "Streams and events").

On the CPU streams and events order nothing (ops run in command order), but the daemon checks
them exactly as on CUDA, so the whole API runs here; torch is the reference for the values.
"""

import gc

import numpy as np
import pytest
import torch

import tensord as td
from helpers import from_torch

pytestmark = pytest.mark.usefixtures("session")


def test_ops_on_two_streams_ordered_by_events_give_torchs_values():
    ta, tb = torch.randn(8, 5), torch.randn(5, 3)
    a, b = from_torch(ta), from_torch(tb)
    s1, s2 = td.Stream(), td.Stream()
    assert s1 != s2 and s1.stream_id != 0 and td.current_stream() == td.default_stream()
    made = td.Event()
    made.record()                        # on the default stream, after a and b
    with td.stream(s1):
        assert td.current_stream() == s1
        s1.wait_event(made)
        c = (a @ b).relu()
        done = s1.record_event()
    with td.stream(s2):
        s2.wait_stream(s1)
        d = c * 2 + 1
    td.current_stream().wait_event(done)
    e = d.sum(dim=0)
    assert td.current_stream() == td.default_stream()
    want = ((ta @ tb).relu() * 2 + 1).sum(dim=0)
    np.testing.assert_allclose(e.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    td.synchronize()  # nothing went wrong


def test_set_stream_and_event_wait_default_to_the_current_stream():
    s = td.Stream()
    td.set_stream(s)
    try:
        x = td.ones(4) * 3
        ev = td.Event()
        ev.record()
        ev.wait()
        assert x.sum().item() == 12.0
    finally:
        td.set_stream(td.default_stream())
    td.synchronize()


def test_waiting_on_an_event_never_recorded_is_a_clear_error_and_the_session_goes_on():
    ev = td.Event()
    td.current_stream().wait_event(ev)
    with pytest.raises(td.InvalidArgumentError,
                       match=f"event {ev.event_id} was never recorded") as e:
        td.synchronize()
    assert e.value.op == "wait_event"
    assert (td.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]   # the session goes on
    td.synchronize()                                      # reported once


def test_dropped_events_are_forgotten_by_the_daemon():
    for _ in range(5000):   # more than the daemon's cap on live events
        ev = td.Event()
        ev.record()
        del ev
        gc.collect(0)
    td.synchronize()


def test_timing_events_are_refused():
    with pytest.raises(ValueError, match="timing"):
        td.Event(enable_timing=True)


def test_allow_tf32_round_trips_and_cpu_float32_stays_exact():
    assert td.backends.cuda.matmul.allow_tf32 is False   # off by default, as PyTorch
    ta, tb = torch.randn(64, 32), torch.randn(32, 16)
    a, b = from_torch(ta), from_torch(tb)
    exact = (a @ b).numpy()
    td.backends.cuda.matmul.allow_tf32 = True
    try:
        assert td.backends.cuda.matmul.allow_tf32 is True
        assert td.backends.cudnn.allow_tf32 is True      # one flag in tensord
        np.testing.assert_array_equal((a @ b).numpy(), exact)   # the CPU ignores it
        x = from_torch(torch.randn(1, 2, 6, 6))
        w = from_torch(torch.randn(3, 2, 3, 3))
        td.nn.functional.conv2d(x, w).numpy()
    finally:
        td.backends.cudnn.allow_tf32 = False
    assert td.backends.cuda.matmul.allow_tf32 is False
    np.testing.assert_allclose(exact, (ta @ tb).numpy(), rtol=1e-5, atol=1e-5)
    td.synchronize()
