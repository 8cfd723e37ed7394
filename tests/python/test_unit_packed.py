"""Packed runs in the Python client (Note [Python packed runs], tensord/_call.py) without a
daemon: the batches the pure-Python ``Session._call_python`` builds, read back with the test's
own decoder (packed_runs.py): which commands are packed, how runs extend, the seqs and the
resume bookkeeping. The entry encodings: test_unit_wire.py; the C path against this one:
test_speedups.py."""

import pytest

from tensord import _wire
from tensord._proto import tensord_pb2 as pb
from tensord._session import Session

from packed_runs import commands_of, detached_session, drive


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("max_cmds,max_bytes", [(1024, 1 << 20), (7, 1 << 20), (1024, 300)])
def test_batches_stand_for_every_command_in_order(packed, max_cmds, max_bytes):
    s = detached_session(packed, max_cmds, max_bytes)
    want, released = drive(s, Session._call_python, 3000, seed=max_cmds + max_bytes)
    got = [c for f in s.frames for c in commands_of(f)]
    assert [q for q, _ in got] == list(range(1, len(got) + 1))
    assert [c for _, c in got if c[0] != "release"] == want
    assert sorted(h for _, c in got if c[0] == "release" for h in c[1]) == sorted(released)
    kinds = [c.WhichOneof("kind") for f in s.frames
             for c in pb.ClientFrame.FromString(f).batch.commands]
    if packed:  # every Release and every plain Call is in a run, and runs are maximal
        assert "release" not in kinds and "packed" in kinds
        for f in s.frames:
            cmds = pb.ClientFrame.FromString(f).batch.commands
            assert not any(a.HasField("packed") and b.HasField("packed")
                           for a, b in zip(cmds, cmds[1:]))
            assert all(c.call.site for c in cmds if c.HasField("call") and not c.call.attrs)
    else:
        assert "packed" not in kinds


def test_resend_bookkeeping_uses_the_last_seq_of_a_run():
    s = detached_session(True)
    site = _wire.encode_site("train.py:3")
    for _ in range(5):
        Session._call_python(s, 4, b"\x01\x02", 1, site, _wire.op_fields(4))
    s._released.extend([6, 7])
    with s._lock:
        s._flush_locked()
    (frame,) = s.frames
    cmds = pb.ClientFrame.FromString(frame).batch.commands
    # the first Call binds the site (a message); the rest and the Release are one run
    assert [c.WhichOneof("kind") for c in cmds] == ["call", "packed"]
    assert (cmds[1].seq, cmds[1].packed.count) == (2, 5)
    assert s._replay.last_seq() == s._sent_seq == 6  # the run's last seq
    assert s._handles.batches[-1] == (6, 1, 6)
    # a run straddling the daemon's applied seq is resent whole; one applied whole is not
    assert s._replay.resend_after(3) == [frame]
    assert s._replay.resend_after(6) == []


def test_sites_bind_once_and_stop_at_the_limit(monkeypatch):
    from tensord import _call

    monkeypatch.setattr(_call, "MAX_SITE_IDS", 2)
    s = detached_session(True)
    sites = [_wire.encode_site(f"a.py:{k}") for k in range(3)]
    for site in sites + sites:
        Session._call_python(s, 4, b"\x01", 1, site, _wire.op_fields(4))
    with s._lock:
        s._flush_locked()
    got = [c for f in s.frames for _, c in commands_of(f)]
    assert got[:3] == [("call", 4, 1, [1], [1], "a.py:0", False),
                       ("call", 4, 2, [1], [2], "a.py:1", False),
                       ("call", 4, 0, [1], [3], "a.py:2", False)]  # past the limit: text
    assert got[3:] == [("call", 4, 1, [1], [4]), ("call", 4, 2, [1], [5]),
                       ("call", 4, 0, [1], [6], "a.py:2", False)]
