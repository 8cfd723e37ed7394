"""The open batch of a session: commands being appended, flushed as one frame, kept until
acknowledged (part of ``Session``; see ``_session`` for the threads and the lock).

Every frame sent is also kept in the session's ``ReplayLog`` (``_replay``) until its Ack
arrives, so that after a resume (``_receiver``) the batches the daemon has not applied can be
sent again on the new stream; while a resume is under way, flushed frames are only kept there.
The handles each frame allocated go to the ``HandleTable`` (``_handles``), which matches them
against its Ack.
"""

from __future__ import annotations

import threading
from typing import Any, List, Optional, Tuple

from . import _errors, _wire
from ._fast import run_release
from ._errors import ConnectionLost
from ._proto import tensord_pb2 as pb
from ._requests import Pending


class Replies(threading.Condition):
    """The receiver → waiters condition (``Session._replies``), counting the waits that blocked
    (``Session.waits``; tools/bench/wan_bench.py prints them per training step: each is at least
    a round trip to a remote daemon)."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.waits = 0

    def wait_for(self, predicate: Any, timeout: Optional[float] = None) -> Any:
        if not predicate():
            self.waits += 1  # under the lock, as every wait_for is
        return super().wait_for(predicate, timeout)


class Batcher:
    """Command batching, flushing and the request bookkeeping of a ``Session``."""

    # Set by Session.__init__ (declared here for readers and type checkers).
    _lock: threading.Lock
    _replies: threading.Condition
    _wake_flusher: threading.Condition
    _entries: List[Any]
    _open: Optional[pb.Command]

    def release(self, handle: int) -> None:
        """Queues ``handle`` for a batched Release. Safe from finalizers in any thread."""
        if self._closing or self._broken is not None:
            return
        self._released.append(handle)
        self._wake_for_releases()

    def _wake_for_releases(self) -> None:
        """Wakes an idle flusher to send what finalizers queued (never blocks)."""
        if self._entries or self._open is not None or not self._flusher_idle:
            return  # a batch is open, or the flusher is awake: a flush drains releases soon
        if self._lock.acquire(blocking=False):  # never block: we may be inside our own lock
            try:
                if self._flusher_idle:
                    self._wake_flusher.notify()
            finally:
                self._lock.release()

    def flush(self) -> None:
        """Sends the open batch now."""
        with self._lock:
            if self._broken is None and not self._closing:
                self._flush_locked()

    def _check_open_locked(self) -> None:
        if self._broken is not None:
            raise _errors.fresh(self._broken)
        if self._closing:
            raise ConnectionLost("the session is closed", code=_errors.CANCELLED, op="session")

    def _grad_mode_locked(self, grad: bool) -> None:
        # the daemon sees the grad mode of the thread that issued each command, in stream order
        if grad != self._grad_sent:
            self._add_locked().options.grad_enabled = grad
            self._grad_sent = grad

    def _add_locked(self) -> Any:
        """A new protobuf Command with the next seq, encoded into the batch when the next
        command is added or the batch is sent."""
        if self._busy is not None:
            self._wait_not_busy_locked()
        if self._open is not None:
            self._commit_locked()
        cmd = self._open = pb.Command()
        self._seq += 1
        cmd.seq = self._seq
        self._frame_bytes += 64
        return cmd

    def _wait_not_busy_locked(self) -> None:
        # a shm transfer's commands must stay consecutive: other threads wait for its end
        me = threading.get_ident()
        if self._busy != me:
            self._replies.wait_for(lambda: self._busy is None or self._broken is not None)
            self._check_open_locked()

    def _new_handle_locked(self) -> int:
        """The handle of an upload starting now. Another thread's exclusive transfer ends
        first: from here to the Put that creates the handle the lock is held (or this thread
        is the one busy), so handles reach the daemon in increasing order and no command of
        ours falls between that transfer's chunks."""
        self._check_open_locked()
        self._wait_not_busy_locked()
        handle = self._next_handle
        self._next_handle += 1
        return handle

    def _exclusive_locked(self, fn: Any) -> Any:
        """Runs ``fn`` (which may wait on ``_replies``) with other threads' commands held back."""
        self._wait_not_busy_locked()
        self._busy = threading.get_ident()
        try:
            return fn()
        finally:
            self._busy = None
            self._replies.notify_all()

    def _commit_locked(self) -> None:
        cmd, self._open = self._open, None
        self._entries.append(_wire.message_entry(cmd.seq, cmd))

    def _count_locked(self) -> int:
        """The commands in the open batch (a packed run's entries count one each)."""
        return self._seq - self._sent_seq

    def _after_add_locked(self) -> None:
        n = self._count_locked()
        if n >= self._max_cmds or self._frame_bytes >= self._max_bytes:
            self._flush_locked()
        elif n == 1 and self._flusher_idle:
            self._wake_flusher.notify()

    def _request_locked(self) -> Tuple[int, Pending]:
        self._check_open_locked()
        return self._requests.new()

    def _queue_check_locked(self) -> None:
        """Note [Deferred backward errors]: queues a host-only Sync after a Backward that no
        caller waits for; ``_raise_checked_locked`` raises what it reports. Raises first the
        error of an earlier check already answered."""
        self._raise_checked_locked()
        rid, p = self._request_locked()
        cmd = self._add_locked()
        p.seq = cmd.seq
        cmd.sync.request_id = rid
        cmd.sync.host_only = True
        self._requests.checks.append((rid, p))

    def raise_checked(self) -> None:
        """``_raise_checked_locked`` for value reads, after their own value came back. The
        daemon answered the checks queued before the read first, but a same-host read may come
        back on another path (the region) than their answers (the stream): wait for those."""
        if not self._requests.checks:
            return
        with self._lock:
            for _, p in list(self._requests.checks):
                if not p.done and self._broken is None:
                    self._replies.waits += 1
                    self._lock.release()
                    try:
                        p.wait()
                    finally:
                        self._lock.acquire()
            self._raise_checked_locked()

    def _raise_checked_locked(self) -> None:
        """Raises the error of the answered checks (Note [Deferred backward errors]) that no
        touch of a spoiled value raised already, as ``synchronize`` would have at their place;
        forgets them. Never waits."""
        # Note [Deferred backward errors]: backward() used to end with synchronize(host_only)
        # so that its errors (a second pass without retain_graph, a saved tensor modified in
        # place) raised at the call, as PyTorch's do; that is a round trip per training step
        # for a remote client (DESIGN.md: only reads and syncs wait). Now the Backward is
        # followed by a host-only Sync nobody waits for; its answer, the same report the wait
        # got, is raised by the next value read, synchronize() or backward(): like CUDA's
        # asynchronous errors in PyTorch, it names the backward's call site.
        error = self._requests.answered_checks()
        if error is not None:
            raise _errors.fresh(error)

    def _wait_locked(self, p: Pending, rid: int) -> None:
        """Waits until ``p`` is answered or the session is over, without the lock meanwhile
        (a resume under way keeps it waiting)."""
        if not p.done and self._broken is None:
            self._replies.waits += 1
            self._lock.release()
            try:
                p.wait()
            finally:
                self._lock.acquire()
        self._requests.finished(rid, p, self._broken)

    def _drain_released_locked(self) -> None:
        if self._released_events:  # dropped Events (_streams.py): the daemon forgets them
            popleft = self._released_events.popleft
            events = [popleft() for _ in range(len(self._released_events))]
            self._add_locked().release.events.extend(events)
        if self._released_shared:  # freed shared buffers (_shared.py)
            popleft = self._released_shared.popleft
            regions = [popleft() for _ in range(len(self._released_shared))]
            self._add_locked().release.shared_buffers.extend(regions)
        if not self._released:
            return
        # Only this thread pops (under the lock); finalizers in other threads may append
        # meanwhile: take what is there now.
        popleft = self._released.popleft
        handles = [popleft() for _ in range(len(self._released))]
        self._handles.released(handles)
        if self._packed:  # Note [Python packed runs]
            self._append_packed_locked(run_release(handles))
        else:
            self._add_locked().release.handles.extend(handles)

    def _flush_locked(self) -> None:
        if self._busy is None:  # never between the chunks of one upload
            self._drain_released_locked()
        if self._open is not None:
            self._commit_locked()
        if self._run is not None:
            self._close_run_locked()
        if not self._entries:
            return
        frame = _wire.frame(self._entries, self._acked_seq)
        self._sent_seq = self._seq
        if self._resume_enabled:
            self._replay.sent(self._seq, frame)
        self._handles.batch_sent(self._seq, self._next_handle)  # for its Ack (HandleTable)
        self._entries = []
        self._frame_bytes = 0
        self._put_frame(frame)

    def _want_ack_locked(self, seq: int) -> None:
        """Before waiting for the Ack of command ``seq`` (``Transport.want_ack``)."""
        if seq > self._acked_seq:
            self._transport.want_ack(seq)

    def _put_frame(self, frame: Optional[bytes]) -> None:
        """Sends ``frame`` (None: end the stream) by the transport. While a resume is under
        way it stays only in ``_replay``, which the resume sends again."""
        if not self._resuming:
            self._transport.send(frame)

    def _flush_loop(self) -> None:
        """The flusher thread. It sleeps until a command opens a batch, lets the batch grow for
        one interval, sends what is open then (unless a read or a threshold sent it first) and
        goes back to sleep if nothing is. Only a sleeping flusher is woken (``_flusher_idle``):
        commands added while it waits out an interval cost no thread wake-up, so a caller that
        issues a few ops and reads a value, again and again, wakes it once per interval at
        most, not once per batch."""
        with self._lock:
            while not self._closing and self._broken is None:
                if not (self._count_locked() or self._released or self._released_shared):
                    self._flusher_idle = True
                    self._wake_flusher.wait()
                    self._flusher_idle = False
                    if self._closing or self._broken is not None:
                        break
                # let the batch grow for one interval, then send whatever is there
                self._wake_flusher.wait(self._flush_interval)
                if not self._closing and self._broken is None:
                    self._flush_locked()
