"""A session's requests and the errors it owes the program (the C++ client's ``RequestTable``).

A request is a command whose answer someone waits for: a Get's data, a Sync's SyncDone, a
Profile, a SharedBuffer. ``RequestTable.new`` gives it an id and a ``Pending`` answer, the
receiver fills that in (``open``), and the waiter forgets it (``finished``). Besides: the
errors the next ``synchronize`` reports (malformed batches, ``frame_error``; minus those a touch
of a spoiled value raised already, ``note_raised``) and the host-only Syncs queued after a
``backward()`` that no caller waits for (Note [Deferred backward errors] in ``_batch.py``).

Not thread-safe: the session calls it under its lock. ``Pending.wait`` is the one call made
without it.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from . import _errors
from ._errors import Error


class Pending:
    """A reply someone waits for: a Get's data, a SyncDone, a Profile, a SharedBuffer or a
    SessionMemoryStats.

    Its waiter sleeps on its own lock (``wait``), released once by the receiver when the reply
    is complete (``finish``) or the session is over (``wake``): one futex hand-off, without the
    shared Condition's Python-level bookkeeping, on the critical path of every value read."""

    __slots__ = ("done", "error", "meta", "buf", "total", "span_size", "lanes", "seq", "_wake",
                 "_woken")

    def __init__(self) -> None:
        self.done = False
        self.seq = 0  # the request's command seq (0: not recorded)
        self.error: Optional[Error] = None
        self.meta: Any = None
        self.buf = bytearray()
        self.total = 0  # Data with a span (Note [Payloads]): the tensor's bytes and the span's
        self.span_size = 0
        self.lanes = 0  # bulk socket Data: the lanes its bytes are striped over (0, 1: lane 0)
        self._wake = threading.Lock()
        self._wake.acquire()
        self._woken = False

    def finish(self) -> None:
        """The reply is complete (under the session's lock)."""
        self.done = True
        self.wake()

    def finish_in_place(self, meta: Any, total: int, size: int, lanes: int = 0) -> None:
        """Answered by one ranged chunk already in place (the region, a shared buffer, the
        client's memory) or on the bulk socket's ``lanes``: its meta (first chunk only), the
        tensor's bytes and this chunk's."""
        self.meta = meta
        self.total = total
        self.span_size = size
        self.lanes = lanes
        self.finish()

    def wake(self) -> None:
        """Lets the waiter go (under the session's lock; once)."""
        if not self._woken:
            self._woken = True
            self._wake.release()

    def wait(self) -> None:
        """Sleeps until ``wake`` (without the session's lock)."""
        self._wake.acquire()


class RequestTable:
    """Requests in flight by id, and the errors owed to the next ``synchronize``."""

    def __init__(self) -> None:
        self._pending: Dict[int, Pending] = {}
        self._next = 1
        #: the highest command seq of an answered request: the daemon ran everything up to it
        self.answered_seq = 0
        #: (request id, answer) of the Syncs queued after backward(), oldest first
        self.checks: "collections.deque[Tuple[int, Pending]]" = collections.deque()
        self._frame_errors: List[Error] = []  # Error{request_id=0}: malformed batches
        self._frame_error_keys: Set[Tuple[int, int, str]] = set()  # those not yet acked
        # _errors.identity of the errors a touch of a spoiled value raised since the last
        # synchronize: that synchronize does not raise them again (DESIGN.md "Errors")
        self._raised: Set[Any] = set()

    def __len__(self) -> int:
        return len(self._pending)

    def __iter__(self) -> Iterator[Pending]:
        return iter(list(self._pending.values()))

    def new(self) -> Tuple[int, Pending]:
        """A new request: its id and the answer its waiter waits for."""
        rid = self._next
        self._next += 1
        p = self._pending[rid] = Pending()
        return rid, p

    def open(self, rid: int) -> Optional[Pending]:
        """The answer request ``rid`` still waits for, or None (not ours, or complete: a
        replayed reply after a resume)."""
        p = self._pending.get(rid)
        return None if p is None or p.done else p

    def finished(self, rid: int, p: Pending, broken: Optional[Error]) -> None:
        """The waiter of ``rid`` is done with it: answered, or the session ended (``broken``
        then becomes its error)."""
        self._pending.pop(rid, None)
        if not p.done:
            p.error = broken
        elif p.seq > self.answered_seq:
            self.answered_seq = p.seq

    # ------------------------------------------------------- errors for synchronize

    def frame_error(self, seq: int, err: Error, code: int, message: str) -> None:
        """An ``Error{request_id 0}`` (a malformed batch ending at ``seq``), once even when a
        resume replays it."""
        key = (seq, code, message)
        if key not in self._frame_error_keys:
            self._frame_error_keys.add(key)
            self._frame_errors.append(err)

    def acked(self, last_seq: int) -> None:
        """An Ack covered ``last_seq``: frame errors up to it can no longer be replayed."""
        if self._frame_error_keys:
            self._frame_error_keys = {k for k in self._frame_error_keys if k[0] > last_seq}

    def note_raised(self, err: Error) -> None:
        """``err`` (a spoiled value's) was raised to the program: not reported again."""
        self._raised.add(_errors.identity(err))

    def sync_error(self, answer: Optional[Error]) -> Optional[Error]:
        """The error a synchronize (or a check) whose answer is ``answer`` reports: that one
        unless a touch raised it already, else the first frame error; forgets both lists."""
        frame_errors, self._frame_errors = self._frame_errors, []
        raised, self._raised = self._raised, set()
        if answer is not None and _errors.identity(answer) not in raised:
            return answer
        return frame_errors[0] if frame_errors else None

    def answered_checks(self) -> Optional[Error]:
        """Forgets the answered checks (Note [Deferred backward errors]); the error the first
        of them reports, as ``synchronize`` would have at its place, or None."""
        error = None
        while self.checks and self.checks[0][1].done:
            rid, p = self.checks.popleft()
            self.finished(rid, p, None)
            found = self.sync_error(p.error)
            if error is None:
                error = found
        return error
