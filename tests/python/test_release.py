"""Handle release on the real daemon: the live-handle count from Admin ListSessions returns to
its baseline once client objects are dropped."""

import gc

import pytest

import tensord as td
from conftest import live_handles


def settle() -> None:
    """Releases what was dropped and waits until the daemon ran it.

    Two syncs: the daemon sends SyncDone before it updates the live-handle count at the end of
    the batch that carried the Sync, so the count is only certain once a later batch ran.
    """
    gc.collect()
    td.synchronize()
    td.synchronize()


def baseline(admin, session):
    settle()
    return live_handles(admin, session.session_id)


def test_dropped_tensors_are_released(session, admin):
    base = baseline(admin, session)
    xs = [td.randn(16, 16) for _ in range(100)]
    ys = [(x @ x + 1).relu().sum(dim=0) for x in xs]  # intermediates die on the way
    settle()
    assert live_handles(admin, session.session_id) == base + 200
    del xs
    assert baseline(admin, session) == base + 100
    del ys
    assert baseline(admin, session) == base


def test_temporaries_and_scalars_are_released(session, admin):
    base = baseline(admin, session)
    x = td.ones(8)
    for _ in range(500):
        x = x * 1.0 + 1  # two scalar uploads and two results per step, all but x dropped
    assert x.numpy()[0] == 501.0
    assert baseline(admin, session) == base + 1
    del x
    assert baseline(admin, session) == base


def test_views_and_uploads_are_released(session, admin):
    base = baseline(admin, session)
    a = td.tensor([[1.0, 2.0], [3.0, 4.0]])
    t = a.transpose(0, 1)
    r = t.reshape(4)
    del a, t  # the view chain keeps the storage alive in the daemon; values stay right
    assert r.tolist() == [1.0, 3.0, 2.0, 4.0]
    assert baseline(admin, session) == base + 1
    del r
    assert baseline(admin, session) == base


def test_poisoned_handles_are_released(session, admin):
    base = baseline(admin, session)
    bad = [td.ones(2) @ td.ones(3) for _ in range(10)]
    with pytest.raises(td.ShapeError):
        td.synchronize()
    del bad
    assert baseline(admin, session) == base


def test_closing_the_session_releases_everything(daemon, admin):
    s = td.connect(daemon).session
    keep = [td.randn(4) for _ in range(20)]
    settle()
    assert live_handles(admin, s.session_id) == 20
    td.close(s)
    resp = admin.ListSessions(__import__("tensord._proto.admin_pb2",
                                         fromlist=["x"]).ListSessionsRequest())
    assert all(x.live_handles == 0 for x in resp.sessions if x.session_id == s.session_id)
    del keep  # finalizers after close are harmless
    gc.collect()
