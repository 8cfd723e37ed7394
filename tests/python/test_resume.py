"""Automatic resume: a session whose stream breaks mid-session goes on transparently.

A TCP proxy between client and daemon (tools/bench/wan_proxy.py) cuts every proxied connection
at a chosen moment (now, or after forwarding a number of bytes from the daemon, i.e. in the
middle of a reply), or drops or stalls a 10 ms link for 5 s in the middle of a training step. Results after
a cut must equal those without one, nothing may be applied twice (counted with in-place
``add_``), and when the daemon no longer has the session (``--resume_grace=0s``, or the grace
period over) reads raise a clear ``tensord.Error``.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from typing import Callable, Iterator, List, Optional

import grpc
import numpy as np
import pytest
import tensord as td
from conftest import running_daemon
from tensord._proto import admin_pb2, admin_pb2_grpc
from tensord._local_transport import LocalTransport

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
from wan_proxy import WanProxy  # noqa: E402


# The proxy: tools/bench/wan_proxy.py's, with no delay and no rate limit unless a test asks.
Proxy = WanProxy


@pytest.fixture(scope="module")
def daemon_address() -> Iterator[str]:
    with running_daemon() as address:
        yield address


@pytest.fixture
def proxy(daemon_address: str) -> Iterator[Proxy]:
    p = Proxy(daemon_address)
    yield p
    p.close()


def session_state(address: str, session_id: str) -> str:
    """The daemon's state for the session ("active", "detached", ...), or "" if gone."""
    channel = grpc.insecure_channel(address)
    try:
        resp = admin_pb2_grpc.AdminStub(channel).ListSessions(admin_pb2.ListSessionsRequest())
    finally:
        channel.close()
    return next((s.state for s in resp.sessions if s.session_id == session_id), "")


def wait_for_state(address: str, session_id: str, states: tuple) -> None:
    """Polls the Admin service (a timer runs on the daemon side) for at most 10 s."""
    deadline = time.monotonic() + 10
    while session_state(address, session_id) not in states:
        assert time.monotonic() < deadline, f"session {session_id} never reached {states}"
        time.sleep(0.02)


def run_ops(steps: int, cut_at: dict, proxy: Proxy, shm: bool) -> None:
    """A loop of ops checked against NumPy, with cuts at the steps in ``cut_at`` (value: None
    to cut now, else a byte budget); ``count`` counts in-place add_ effects."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    big = rng.standard_normal(1 << 19).astype(np.float32)  # 2 MiB: shm or several chunks
    ta = td.tensor(a)
    count = td.zeros(3, dtype=td.int64)
    ref = a.copy()
    for i in range(steps):
        if i in cut_at:
            if cut_at[i] is None:
                proxy.cut()
            else:
                proxy.cut_after(cut_at[i])
        ta = (ta @ td.tensor(np.eye(64, dtype=np.float32) * 0.5)).tanh() + float(i)
        ref = np.tanh(ref @ (np.eye(64, dtype=np.float32) * 0.5)) + np.float32(i)
        count.add_(1)
        if i % 3 == 0:
            np.testing.assert_allclose(ta.numpy(), ref, rtol=1e-5, atol=1e-5)
        if i % 5 == 2:  # big transfers both ways across cuts
            tb = td.tensor(big) * 2.0
            np.testing.assert_array_equal(tb.numpy(), big * 2.0)
    np.testing.assert_allclose(ta.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(count.numpy(), np.full(3, steps))  # nothing applied twice
    td.synchronize()


@pytest.mark.parametrize("shm", [False, True], ids=["stream", "shm"])
def test_results_after_cuts_equal_those_without(proxy: Proxy, shm: bool) -> None:
    with td.connect(proxy.address, shm=shm) as s:
        run_ops(40, {3: None, 11: 300, 17: 5000, 24: 70000, 31: None}, proxy, shm)
        assert s.resumes >= 2, "the stream was never cut"
        assert not s.closed


def test_cross_memory_attach_binds_again_after_a_cut(proxy: Proxy,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # The daemon drops a resumed session's binding (the resumer might be another process):
    # the client binds again with the new Welcome's ticket before it resends, and big uploads
    # still go by cross-memory attach.
    puts = []
    real = LocalTransport._put_in_place_locked

    def spy(self, handle, header, where, nbytes):
        if not isinstance(where, tuple):  # an address: by cross-memory attach
            puts.append(where)
        return real(self, handle, header, where, nbytes)

    monkeypatch.setattr(LocalTransport, "_put_in_place_locked", spy)
    # An upload takes cross-memory attach only when the daemon has acknowledged everything
    # sent: a cyclic collection of an earlier test's tensors between the synchronize and the
    # upload sends Releases that the cut leaves unacknowledged, and the upload rightly goes by
    # the region instead. No collections while this test runs.
    gc.collect()
    gc.disable()
    try:
        check_binds_again(proxy, puts)
    finally:
        gc.enable()


def check_binds_again(proxy: Proxy, puts: list) -> None:
    big = np.random.default_rng(1).standard_normal(1 << 19).astype(np.float32)
    with td.connect(proxy.address) as s:
        np.testing.assert_array_equal(td.tensor(big).numpy(), big)
        assert len(puts) == 1
        for i in range(2):
            s.synchronize()  # caught up (Releases acknowledged): the upload may take it
            proxy.cut()
            np.testing.assert_array_equal((td.tensor(big) * 2.0).numpy(), big * 2.0)
            assert len(puts) == i + 2, "the upload left cross-memory attach"
        assert s.resumes == 2 and s._transport.cma.bound


def test_cuts_at_many_points_of_the_reply_stream(proxy: Proxy) -> None:
    # Cut after 0, 397, 794, ... more bytes of replies: inside Data, between Data and its Ack,
    # inside an Ack; replies seen before the cut are replayed and must be ignored.
    with td.connect(proxy.address, shm=False) as s:
        x = td.arange(0, 4096, dtype=td.float32)
        base = np.arange(0, 4096, dtype=np.float32)
        count = td.zeros(1, dtype=td.int64)
        budgets = range(0, 20000, 397)
        for b in budgets:
            proxy.cut_after(b)
            count.add_(1)
            np.testing.assert_array_equal((x + b).numpy(), base + b)
        assert count.item() == len(budgets)
        assert s.resumes >= len(budgets) // 2


def test_tiny_op_loops_across_cuts(proxy: Proxy) -> None:
    # Batches of packed runs (Note [Python packed runs]) cut at many points: a run whose
    # first entries the daemon applied is resent whole and must not apply them twice.
    with td.connect(proxy.address, shm=False) as s:
        assert s._packed
        x, one = td.zeros(1), td.ones(1)
        count = td.zeros(1, dtype=td.int64)
        total = 0
        for k in range(40):
            if k % 2:
                proxy.cut_after(97 * k)  # inside a reply
            else:
                proxy.cut()
            for _ in range(50 + 37 * k):
                x = x + one
                x = x * one
                total += 1
            count.add_(1)
            assert x.item() == total
        assert count.item() == 40
        assert s.resumes >= 20


@pytest.mark.parametrize("bulk", [False, True])
def test_pending_reads_in_other_threads_complete_across_a_cut(proxy: Proxy, daemon_address: str,
                                                               bulk: bool) -> None:
    # bulk=False: the stream's Data chunks are what is cut; True: the bulk socket (docs/protocol.md
    # "Bulk socket") carries the bytes past the proxy, and the cut loses Acks and bulk Data frames
    with td.connect(proxy.address, shm=False, bulk=bulk) as s:
        x = td.arange(0, 1 << 20, dtype=td.float32)  # 4 MiB: four Data chunks per read
        expect = np.arange(0, 1 << 20, dtype=np.float32)
        x.sum().item()
        results: List[object] = [None] * 4

        def read(k: int) -> None:
            try:
                results[k] = (x + k).numpy()
            except Exception as e:  # reported below
                results[k] = e

        proxy.cut_after(200 if bulk else 1 << 20)  # in the middle of the replies
        threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, r in enumerate(results):
            assert isinstance(r, np.ndarray), r
            np.testing.assert_array_equal(r, expect + k)
        assert s.resumes >= 1
        assert bool(s._transport.lanes.state) == bulk
        assert session_state(daemon_address, s.session_id) == "active"


def test_resume_after_the_daemon_detached_the_session(proxy: Proxy,
                                                      daemon_address: str) -> None:
    # shm=False: the command ring and the mailbox would carry the add and the read past the
    # cut stream, so the read could finish before the receiver resumes (a flaky resumes == 0)
    with td.connect(proxy.address, shm=False) as s:
        c = td.zeros(1)
        c.add_(1)
        assert c.item() == 1
        proxy.refuse = True
        proxy.cut()
        c.add_(10)  # queued while the stream is down
        wait_for_state(daemon_address, s.session_id, ("detached",))
        proxy.refuse = False
        assert c.item() == 11
        assert s.resumes == 1


# shm=False where a read must fail right after a cut: the command ring and the mailbox
# (same host) do not go through the stream, so such a read could still succeed until the
# receiver notices the cut (the stream's failure is what these tests are about).
def test_resume_disabled_raises_at_once(proxy: Proxy) -> None:
    with td.connect(proxy.address, resume=False, shm=False) as s:
        x = td.ones(4)
        assert x.sum().item() == 4
        proxy.cut()
        with pytest.raises(td.ConnectionLost):
            (x + 1).numpy()
        assert s.resumes == 0


def test_no_grace_period_gives_a_clear_error() -> None:
    with running_daemon("--resume_grace=0s") as address:
        proxy = Proxy(address)
        try:
            with td.connect(proxy.address, shm=False) as s:
                x = td.ones(4)
                assert x.sum().item() == 4
                y = x * 3
                proxy.cut()
                with pytest.raises(td.Error, match="the tensord session could not be resumed: "
                                   ".*no resumable session"):
                    y.numpy()
                with pytest.raises(td.Error, match="could not be resumed"):
                    (x + 1).numpy()  # later reads too
                assert s.closed
        finally:
            proxy.close()


def test_expired_grace_period_fails_a_pending_read() -> None:
    with running_daemon("--resume_grace=1s") as address:
        proxy = Proxy(address)
        try:
            with td.connect(proxy.address, shm=False) as s:
                x = td.ones(4)
                assert x.sum().item() == 4
                proxy.refuse = True  # the daemon is unreachable while the grace period runs out
                proxy.cut()
                outcome: List[BaseException] = []

                def read() -> None:
                    try:
                        (x * 2).numpy()
                    except BaseException as e:
                        outcome.append(e)

                reader = threading.Thread(target=read)
                reader.start()
                wait_for_state(address, s.session_id, ("",))  # released by the daemon
                proxy.refuse = False
                reader.join()
                assert len(outcome) == 1 and isinstance(outcome[0], td.Error), outcome
                assert "the tensord session could not be resumed" in str(outcome[0])
                assert outcome[0].code == 5  # NOT_FOUND
        finally:
            proxy.close()


def test_a_killed_session_is_not_resumed(proxy: Proxy, daemon_address: str) -> None:
    with td.connect(proxy.address) as s:
        x = td.ones(4)
        assert x.sum().item() == 4
        channel = grpc.insecure_channel(daemon_address)
        admin_pb2_grpc.AdminStub(channel).KillSession(
            admin_pb2.KillSessionRequest(session_id=s.session_id))
        channel.close()
        with pytest.raises(td.Error, match="killed by an administrator"):
            (x + 1).numpy()
        assert s.resumes == 0


def train_mlp(steps: int, fault: Optional[Callable[[int], None]] = None) -> List[np.ndarray]:
    """``steps`` SGD steps (momentum, one ``loss.item()`` each) of a small MLP on the default
    session; ``fault(i)`` runs in the middle of step ``i`` (forward queued, backward, step and
    the read not yet). Returns the final parameters and the losses."""
    td.manual_seed(0)
    model = td.nn.Sequential(td.nn.Linear(32, 64), td.nn.ReLU(), td.nn.Linear(64, 10))
    opt = td.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((16, 32)).astype(np.float32) for _ in range(steps)]
    ys = [rng.integers(0, 10, 16) for _ in range(steps)]
    count = td.zeros(1, dtype=td.int64)  # one add_ per step: applied once, never twice
    losses = []
    for i in range(steps):
        opt.zero_grad()
        loss = td.nn.functional.cross_entropy(model(td.tensor(xs[i])), td.tensor(ys[i]))
        if fault is not None:
            fault(i)
        loss.backward()
        opt.step()
        count.add_(1)
        losses.append(loss.item())
    assert count.item() == steps
    return [p.detach().numpy() for p in model.parameters()] + [np.array(losses)]


@pytest.mark.parametrize("kind", ["drop", "stall"])
def test_a_5s_network_drop_mid_step_resumes_without_losing_or_repeating_work(
        daemon_address: str, kind: str) -> None:
    # A Wi-Fi drop of 5 s on a 10 ms link (tools/bench/wan_proxy.py), in the middle of a
    # training step: "drop" cuts every connection and refuses new ones for 5 s (the session
    # resumes on a new stream), "stall" delivers nothing for 5 s (TCP survives). Either way the
    # training ends where it ends without a drop, bit for bit.
    with td.connect(daemon_address, shm=False):
        expect = train_mlp(6)
    with WanProxy(daemon_address, rtt=0.010) as proxy:
        with td.connect(proxy.address, shm=False) as s:
            t0 = []

            def fault(i: int) -> None:
                if i == 3:
                    t0.append(time.monotonic())
                    getattr(proxy, kind)(5.0)

            got = train_mlp(6, fault)
            assert time.monotonic() - t0[0] >= 5.0  # the drop did hold the step up
            assert s.resumes == (1 if kind == "drop" else 0)
            assert proxy.cuts == (1 if kind == "drop" else 0)
    for g, e in zip(got, expect):
        np.testing.assert_array_equal(g, e)
