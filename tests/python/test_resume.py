"""Automatic resume: a session whose stream breaks mid-session goes on transparently.

A TCP proxy between client and daemon cuts every proxied connection at a chosen moment (now, or
after forwarding a number of bytes from the daemon, i.e. in the middle of a reply). Results after
a cut must equal those without one, nothing may be applied twice (counted with in-place
``add_``), and when the daemon no longer has the session (``--resume_grace=0s``, or the grace
period over) reads raise a clear ``tensord.Error``.
"""

from __future__ import annotations

import gc
import socket
import threading
import time
from typing import Iterator, List, Optional

import grpc
import numpy as np
import pytest
import tensord as td
from conftest import running_daemon
from tensord._proto import admin_pb2, admin_pb2_grpc
from tensord._session import Session


class Proxy:
    """Accepts on 127.0.0.1:0 and pipes bytes to ``target``; ``cut()`` breaks every proxied
    connection, ``cut_after(n)`` does so after forwarding ``n`` more bytes from the daemon, and
    ``refuse`` closes new connections at once (an unreachable daemon)."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._lock = threading.Lock()
        self._socks: List[socket.socket] = []
        self._threads: List[threading.Thread] = []
        self._budget: Optional[int] = None  # daemon→client bytes left before cutting
        self.refuse = False
        self.cuts = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def cut(self) -> None:
        """Breaks every proxied connection now (both directions)."""
        with self._lock:
            self._cut_locked()

    def cut_after(self, nbytes: int) -> None:
        """Breaks every connection once ``nbytes`` more bytes went from daemon to client."""
        with self._lock:
            self._budget = nbytes

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept(); close() alone does not
        except OSError:
            pass
        self._acceptor.join()
        self._listener.close()
        self.cut()
        with self._lock:
            threads, self._threads = self._threads, []
        for t in threads:
            t.join()

    def _cut_locked(self) -> None:
        socks, self._socks = self._socks, []
        self._budget = None
        self.cuts += 1
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)  # the pumps see EOF/errors and close both ends
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self.refuse:
                    client.close()
                    continue
                upstream = socket.create_connection(self._target)
                self._socks += [client, upstream]
                for src, dst, down in ((client, upstream, False), (upstream, client, True)):
                    t = threading.Thread(target=self._pump, args=(src, dst, down), daemon=True)
                    self._threads.append(t)
                    t.start()

    def _pump(self, src: socket.socket, dst: socket.socket, downstream: bool) -> None:
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if downstream:
                    with self._lock:
                        if self._budget is not None:
                            if len(data) >= self._budget:
                                dst.sendall(data[:self._budget])
                                self._cut_locked()
                                break
                            self._budget -= len(data)
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        src.close()


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
    real = Session._put_cma_locked

    def spy(self, address, nbytes, fields):
        puts.append(address)
        return real(self, address, nbytes, fields)

    monkeypatch.setattr(Session, "_put_cma_locked", spy)
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
        assert s.resumes == 2 and s._cma_bound


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


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "messages"])
def test_tiny_op_loops_across_cuts(proxy: Proxy, packed: bool) -> None:
    # Batches of packed runs (Note [Python packed runs]) cut at many points: a run whose
    # first entries the daemon applied is resent whole and must not apply them twice.
    with td.connect(proxy.address, shm=False, packed=packed) as s:
        assert s._packed is packed
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
        assert bool(s._bulk_state) == bulk
        assert session_state(daemon_address, s.session_id) == "active"


def test_resume_after_the_daemon_detached_the_session(proxy: Proxy,
                                                      daemon_address: str) -> None:
    with td.connect(proxy.address) as s:
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
