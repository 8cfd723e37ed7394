"""The Python client's C hot path (``tensord/_speedups.c``) against its pure-Python twin.

The whole suite runs twice in ``tools/test.sh``: with the extension and with
``TENSORD_PURE_PYTHON=1``. Here: the bytes each path puts on the wire, the cases the C path
must hand back to Python (grad mode changes, scalars, other sessions, flushes), and many
threads issuing ops at once. Tests of the C path itself carry the ``c_module`` mark
(c_modules.py: they skip under ``TENSORD_PURE_PYTHON=1``, fail in strict mode without it).
"""

import os
import random
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import tensord as td
from tensord import _fast, _site, _wire

from conftest import CLIENT
from helpers import line
from packed_runs import decode_run, detached_session, drive
from tensord._session import Session

built = pytest.mark.c_module("_speedups")


@built
def test_call_entry_matches_the_python_encoder():
    rng = random.Random(7)
    values = [0, 1, 127, 128, 16383, 16384, 2**28 - 1, 2**28, 2**35 + 3, 2**63 + 5]
    for _ in range(2000):
        seq = rng.choice(values) if rng.random() < 0.5 else rng.randrange(2**40)
        first = rng.choice(values) if rng.random() < 0.5 else rng.randrange(2**40)
        op_part = _wire.op_fields(rng.randrange(300))
        inputs = _wire.packed([rng.randrange(2**30) for _ in range(rng.randrange(1, 5))])
        site = _wire.encode_site("x" * rng.randrange(0, 300))
        want = _wire.call_entry_packed(_wire.varint(seq), op_part, inputs, _wire.varint(first),
                                       site)
        assert _fast.speedups.call_entry(seq, op_part, inputs, first, site) == want


@built
def test_run_encoders_match_the_python_ones():
    # Note [Python packed runs]: the C entries against _wire's and the test's own decoder
    rng = random.Random(11)
    values = [0, 1, 127, 128, 16383, 16384, 2**28 - 1, 2**28, 2**35 + 3, 2**63 + 5]
    c = _fast.speedups
    for _ in range(2000):
        op, site, first = rng.choice(values[:8]), rng.choice(values[:8]), rng.choice(values)
        ins = [rng.choice(values) for _ in range(rng.randrange(0, 5))]
        rel = [rng.choice(values) for _ in range(rng.randrange(0, 6))]
        op_v, site_v, packed_ins = _wire.varint(op), _wire.varint(site), _wire.packed(ins)
        call = c.run_call(_wire.op_fields(op), site_v, packed_ins, first)
        assert call == _wire.run_call(op_v, site_v, packed_ins, _wire.varint(first))
        assert c.run_call(_wire.op_fields(op, [("alpha", "f", 2.0)]), site_v, packed_ins,
                          first) is None  # attributes: no entry
        release = c.run_release(rel)
        assert release == _wire.run_release(rel)
        assert decode_run(call + release) == [("call", op, site, ins, [first]), ("release", rel)]
        seq, count = rng.choice(values), rng.randrange(1, 2**32)
        assert (c.run_entry(seq, count, call + release)
                == _wire.run_entry(seq, count, call + release))


@built
@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("max_cmds,max_bytes", [(1024, 1 << 20), (7, 1 << 20), (1024, 300)])
def test_c_and_python_build_the_same_batches(packed, max_cmds, max_bytes):
    # The same commands through Session.call (C, falling back to Python where it must) and
    # through the Python method alone: byte-identical frames (test_unit_packed.py checks
    # what the Python ones stand for).
    frames = {}
    for name, call in (("c", Session.call), ("python", Session._call_python)):
        s = detached_session(packed, max_cmds, max_bytes)
        drive(s, call, 3000, seed=max_cmds + max_bytes)
        frames[name] = s.frames
    assert len(frames["c"]) > 1 and frames["c"] == frames["python"]


@built
def test_operators_are_the_c_methods(session):
    assert type(td.Tensor.__add__).__name__ == "BinaryMethod"
    assert td.Tensor.__add__.__wrapped__.__name__ == "add_operator"
    assert td.Tensor.__del__.__wrapped__ is td.Tensor._release
    x = td.tensor([1.0, 2.0])
    assert (x.__add__(x)).tolist() == [2.0, 4.0]  # bound through the descriptor too


def test_dependent_adds_match_torch(session):
    x, one = td.tensor([0.5, -1.0]), td.tensor([1.0, 2.0])
    xr, oner = torch.tensor([0.5, -1.0]), torch.tensor([1.0, 2.0])
    for i in range(3000):  # several batches: the C path, and Python's flushes between them
        x = x * one - one + x if i % 3 == 0 else x + one
        xr = xr * oner - oner + xr if i % 3 == 0 else xr + oner
    np.testing.assert_allclose(x.numpy(), xr.numpy(), rtol=1e-6)


def test_grad_mode_changes_reach_the_daemon(session):
    w = td.tensor([2.0, 3.0], requires_grad=True)
    b = td.tensor([1.0, 1.0])
    y = w * b  # grad on: recorded
    with td.no_grad():
        z = w * b  # the mode changed: Python sends SetOptions first
    u = w + b
    assert (y.requires_grad, z.requires_grad, u.requires_grad) == (True, False, True)
    (y + u).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_mixed_operands_and_sessions(session, daemon):
    x = td.tensor([1.0, 2.0])
    assert (x + 1).tolist() == [2.0, 3.0]
    assert (2 * x + x).tolist() == [3.0, 6.0]
    assert (x + np.float32(0.5)).tolist() == [1.5, 2.5]
    with pytest.raises(TypeError):
        x + "a"
    with td.connect(daemon):  # the default session until the block ends
        y = td.tensor([1.0, 1.0])
        with pytest.raises(ValueError, match="different tensord sessions"):
            x + y
        assert (y + y).tolist() == [2.0, 2.0]


def test_errors_name_the_callers_line(session):
    a, b = td.tensor([1.0, 2.0, 3.0]), td.tensor([1.0, 2.0])
    bad = a + b; site = f"test_speedups.py:{line()}"  # noqa: E702
    with pytest.raises(td.ShapeError, match=f"^add at {site}"):
        bad.numpy()


def test_threads_issue_ops_at_once(session):
    one = td.tensor([1.0])
    results = {}

    def work(k):
        x = td.tensor([float(k)])
        for _ in range(4000):
            x = x + one
        results[k] = x.item()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: k + 4000.0 for k in range(4)}
    td.synchronize()


def test_site_field_from_c_is_the_callers_frame():
    # site_field(1) called with no Python frame in between (as the C method calls it) names
    # the frame that ran the operator: checked here through a plain call from this frame.
    field = _site.site_field(1)
    assert _site.site_string(field) == f"test_speedups.py:{line() - 1}"


def test_pure_python_gives_the_same_values(daemon):
    # The same program under both paths, in fresh interpreters.
    prog = ("import sys, tensord as td\n"
            "td.connect(sys.argv[1])\n"
            "x, w = td.tensor([0.25, 2.0]), td.tensor([0.5, -0.25], requires_grad=True)\n"
            "for _ in range(500): x = x * w + x - w\n"
            "x.sum().backward()\n"
            "from tensord import _fast\n"
            "print(_fast.speedups is not None, x.tolist(), w.grad.tolist())\n")
    out = {}
    for pure in ("0", "1"):
        env = dict(os.environ, TENSORD_PURE_PYTHON=pure, PYTHONPATH=CLIENT)
        out[pure] = subprocess.run([sys.executable, "-c", prog, daemon], env=env, check=True,
                                   capture_output=True, text=True).stdout.split(" ", 1)
    assert out["1"][0] == "False"  # out["0"][0]: whether the extension is built
    assert out["0"][1] == out["1"][1]
