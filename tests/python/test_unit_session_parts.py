"""A session's bookkeeping parts alone, without a daemon: ``HandleTable`` (Acks matched against
the handles each batch allocated, releases before and after an Ack, packed metas, the error
for metadata that never came), ``ReplayLog`` (what a resume resends) and ``RequestTable``
(requests by id, the errors the next synchronize owes)."""

from __future__ import annotations

import random

import threading

import tensord as td
from tensord._handle_table import HandleTable
from tensord._meta import _Meta, _meta_from_proto
from tensord._proto import tensord_pb2 as pb
from tensord._replay_log import ReplayLog
from tensord._requests import RequestTable

from packed_runs import meta_entry

DEVICES = ("cpu", "cuda:0")


def tensor_meta(handle, shape=(2, 3), dtype=pb.FLOAT32, error=""):
    m = pb.TensorMeta(handle=handle, dtype=dtype, shape=shape, device="cpu", is_leaf=True)
    if error:
        m.error.code = 3
        m.error.message = error
    return m


def ack(last_seq, created=(), packed=b""):
    return pb.Ack(last_seq=last_seq, created=list(created), packed_created=packed)


def test_an_ack_describes_the_handles_its_batch_allocated():
    t = HandleTable(DEVICES)
    t.batch_sent(4, next_handle=4)  # handles 1, 2, 3
    t.on_ack(ack(4, [tensor_meta(h) for h in (1, 2, 3)]), after=0)
    assert t.acked_handle == 3 and not t.batches
    assert t.take(2) == tensor_meta(2) and t.take(2) is None  # handed out once
    assert t.has(1) and not t.has(2)
    assert t.nbytes(1) == 24 and t.nbytes(2) is None


def test_released_before_or_after_the_ack_keeps_no_metadata():
    t = HandleTable(DEVICES)
    t.batch_sent(3, next_handle=4)
    t.released([2])  # before its Ack
    assert t.dropped == {2}
    t.on_ack(ack(3, [tensor_meta(h) for h in (1, 2, 3)]), after=0)
    assert sorted(t.meta) == [1, 3] and not t.dropped
    t.released([1])  # after
    assert sorted(t.meta) == [3] and not t.dropped


def test_one_ack_for_several_batches_and_handles_out_of_range():
    t = HandleTable(DEVICES)
    t.batch_sent(2, next_handle=3)  # 1, 2
    t.batch_sent(5, next_handle=6)  # 3, 4, 5
    t.batch_sent(9, next_handle=7)  # 6: not covered by the Ack below
    t.released([4, 6])
    # held Acks merged: the first two batches at once; handle 5 made nothing (None output)
    t.on_ack(ack(5, [tensor_meta(h) for h in (1, 2, 3, 4)]), after=0)
    assert sorted(t.meta) == [1, 2, 3] and t.acked_handle == 4
    assert t.dropped == {6}  # still to come
    assert list(t.batches) == [(9, 6, 7)]
    t.on_ack(ack(9, [tensor_meta(6)]), after=5)
    assert sorted(t.meta) == [1, 2, 3] and not t.dropped and not t.batches


def test_packed_metas_and_messages_together():
    t = HandleTable(DEVICES)
    t.batch_sent(3, next_handle=5)  # 1..4
    t.released([3])
    packed = b"".join(meta_entry(h, pb.FLOAT32, 1, 2, [h, 2]) for h in (1, 3, 4))
    bad = tensor_meta(2, error="matmul: shapes")
    t.on_ack(ack(3, [bad], packed), after=0)
    assert sorted(t.meta) == [1, 2, 4] and not t.dropped and t.acked_handle == 4
    m = t.take(4)
    assert type(m) is _Meta and m.shape == (4, 2) and m.device == "cuda:0" and m.is_leaf
    assert m == _meta_from_proto(pb.TensorMeta(handle=4, dtype=pb.FLOAT32, shape=[4, 2],
                                               device="cuda:0", is_leaf=True))
    assert t.nbytes(1) == 1 * 2 * 4 and t.nbytes(2) is None  # spoiled: no size


def test_metadata_that_did_not_decode_is_reported_with_the_reason():
    t = HandleTable(DEVICES)
    t.batch_sent(7, next_handle=3)
    t.on_ack(ack(7, [], meta_entry(1, pb.FLOAT32, 0, 0, [1]) + b"\x02\x01\x09"), after=5)
    assert t.has(1) and not t.has(2)
    err = t.missing(2, 6)
    assert "command 6" in str(err) and "handle 2" in str(err) and "did not decode" in str(err)
    assert "did not decode" not in str(t.missing(9, 8))  # another Ack's command


def test_random_releases_never_leave_metadata_behind():
    rng = random.Random(3)
    t = HandleTable(DEVICES)
    handle, seq, live = 1, 0, set()
    pending = []  # (last seq, handles) sent, not acknowledged
    for _ in range(300):
        n = rng.randrange(0, 5)
        seq += n + 1
        made = list(range(handle, handle + n))
        handle += n
        t.batch_sent(seq, handle)
        pending.append((seq, made))
        live.update(made)
        for h in rng.sample(sorted(live), k=min(len(live), rng.randrange(0, 3))):
            live.discard(h)
            t.released([h])
        if rng.random() < 0.5:  # one Ack for the batches sent so far
            k = rng.randrange(1, len(pending) + 1)
            covered, pending = pending[:k], pending[k:]
            after = covered[0][0] - len(covered[0][1]) - 1
            hs = [h for _, made in covered for h in made]
            t.on_ack(ack(covered[-1][0], [tensor_meta(h) for h in hs]), after=after)
        assert set(t.meta) <= live
    acked = {h for h in live if h <= t.acked_handle}
    assert set(t.meta) == acked


def test_replay_log_resends_what_the_daemon_did_not_apply():
    log = ReplayLog()
    assert len(log) == 0 and log.last_seq() == 0 and log.resend_after(0) == []
    for last, frame in ((3, b"a"), (7, b"b"), (8, b"c")):
        log.sent(last, frame)
    assert log.resend_after(0) == [b"a", b"b", b"c"]
    assert log.resend_after(5) == [b"b", b"c"]  # frame b straddles 5: it goes again whole
    log.acked(7)
    assert len(log) == 1 and log.last_seq() == 8 and log.resend_after(7) == [b"c"]
    log.acked(8)
    assert len(log) == 0


def _error(message):
    return td.InvalidArgumentError(message, op="add", site="t.py:1")


def test_requests_by_id_answered_once():
    r = RequestTable()
    rid, p = r.new()
    rid2, p2 = r.new()
    assert rid != rid2 and len(r) == 2 and r.open(rid) is p and r.open(99) is None
    p.seq = 5
    p.finish()
    assert r.open(rid) is None  # a replayed answer finds nothing to fill
    r.finished(rid, p, None)
    assert len(r) == 1 and r.answered_seq == 5
    broken = td.ConnectionLost("gone")
    r.finished(rid2, p2, broken)  # never answered: the session's end is its error
    assert p2.error is broken and r.answered_seq == 5 and len(r) == 0


def test_pending_wait_returns_once_woken_from_another_thread():
    p = RequestTable().new()[1]
    t = threading.Thread(target=p.finish)
    t.start()
    p.wait()
    t.join()
    assert p.done
    p.wake()  # a second wake is harmless


def test_synchronize_reports_an_error_once_and_not_one_already_raised():
    r = RequestTable()
    bad, frame = _error("shapes"), _error("malformed batch")
    assert r.sync_error(None) is None
    r.frame_error(3, frame, 3, "malformed")
    r.frame_error(3, frame, 3, "malformed")  # replayed after a resume: once
    assert r.sync_error(bad) is bad
    assert r.sync_error(None) is None  # both forgotten
    r.note_raised(bad)
    r.frame_error(4, frame, 3, "malformed")
    assert r.sync_error(_error("shapes")) is frame  # the same error, raised by a touch
    r.frame_error(4, frame, 3, "malformed")  # not acked yet: still a replay
    assert r.sync_error(None) is None
    r.acked(4)
    r.frame_error(4, frame, 3, "malformed")  # after its Ack: a new one
    assert r.sync_error(None) is frame


def test_answered_checks_report_the_first_error_in_order():
    r = RequestTable()
    checks = [r.new() for _ in range(3)]
    r.checks.extend(checks)
    (_, a), (_, b), (_, c) = checks
    a.seq, b.seq, c.seq = 2, 4, 6
    b.error = _error("second pass")
    b.finish()
    assert r.answered_checks() is None and len(r.checks) == 3  # in order: a first
    a.finish()
    assert r.answered_checks() is b.error and len(r.checks) == 1
    assert r.answered_seq == 4 and len(r) == 1
    c.error = b.error
    c.finish()
    r.note_raised(b.error)
    assert r.answered_checks() is None and not r.checks
