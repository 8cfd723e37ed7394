"""The receiver thread of a session: applies replies and resumes a stream that failed in transit
(part of ``Session``; docs/protocol.md, and the daemon's server/session_outbox.h Note [Resume]).

Replies: Ack metadata, Data chunks, SyncDone, Profile, SharedBuffer, SessionMemoryStats and Error
frames, applied under the session's lock; waiters are woken through ``_replies``.

Resume: when the stream fails with a transport error (UNAVAILABLE, a reset connection; never a
status the daemon chose, such as a bad token, a killed session or a shutdown), the receiver
opens a new stream to the same address with ``Hello{resume_session_id, resume_secret,
resume_received_seq = the last Ack's seq}``, retrying with backoff for ``resume_timeout``.
The daemon answers ``Welcome{resumed, resumed_applied_seq}`` and replays every frame after
that Ack; the client then resends its batches after ``resumed_applied_seq`` (the daemon skips
commands it already applied) and goes on. Waiters keep waiting meanwhile and complete from the
replayed or the new replies. Replies already seen are ignored: Acks at or below the last Ack,
anything for a request already completed, a frame error seen before.
If the daemon refuses (NOT_FOUND once the grace period is over, DATA_LOSS) or nothing answers in
time, the session ends with ``ConnectionLost("the tensord session could not be resumed: ...")``.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Optional, Tuple

import grpc
import numpy as np

from . import _data_frame, _errors
from ._connection import AttemptTimeout, Connection, is_transport_failure, rpc_code
from ._data_frame import DataChunk
from ._errors import ConnectionLost, Error, ProtocolError

_BIG_DOWNLOAD = 1 << 20
# Data.payload cases whose bytes are not in the frame (Note [Payloads] in proto/tensord.proto)
_IN_PLACE = ("region", "cma", "bulk")
_FIRST_BACKOFF = 0.02
_MAX_BACKOFF = 1.0


def download_buffer(nbytes: int) -> Any:
    """Where a download of ``nbytes`` is assembled. Big ones in a NumPy array: its memory is
    not zeroed first, and NumPy asks for transparent huge pages on it, so filling it costs a
    page fault per 2 MiB instead of one per 4 KiB (the C++ client's Note [Download
    destination])."""
    return np.empty(nbytes, dtype=np.uint8) if nbytes >= _BIG_DOWNLOAD else bytearray(nbytes)


def resume_failed(reason: str, code: int) -> ConnectionLost:
    """The error every pending and later read raises when a resume failed."""
    return ConnectionLost(f"the tensord session could not be resumed: {reason}", code=code)


class Receiver:
    """Reply handling and resume of a ``Session``."""

    _lock: threading.Lock
    _replies: threading.Condition
    _stop: threading.Event

    def _receive(self) -> None:
        """The receiver thread: reads the current stream until it ends for good."""
        conn = self._conn
        while True:
            err, transient = self._pump(conn)
            conn.mark_dead()  # before taking the lock: a blocked sender returns
            if not transient:
                break
            with self._lock:
                if self._closing:
                    break
                self._resuming = True
            conn.close()
            failure = self._resume(err)
            if failure is None:
                conn = self._conn
                continue
            err = failure
            break
        with self._lock:
            if self._closing and err.code in (_errors.UNAVAILABLE, _errors.CANCELLED):
                err = ConnectionLost("the session is closed", code=_errors.CANCELLED,
                                     op="session")
            self._broken = err
            self._resuming = False
            for p in self._requests:
                p.wake()
            self._transport.ended()
            self._replies.notify_all()
            self._wake_flusher.notify_all()

    def _pump(self, conn: Connection) -> Tuple[Error, bool]:
        """Applies the replies of ``conn`` until it ends: (why, whether a resume may help)."""
        try:
            for frame in conn.frames():
                with self._lock:
                    self._on_frame(frame)
                    self._replies.notify_all()
            return ConnectionLost("the daemon ended the session", code=_errors.UNAVAILABLE,
                                  op="session"), False
        except grpc.RpcError as e:
            code, details = rpc_code(e)
            transient = self._resume_enabled and is_transport_failure(code, details)
            return _errors.from_rpc_error(e), transient
        except Exception as e:  # a bug here must not leave waiters hanging
            return ProtocolError(f"receiver failed: {e!r}", op="session"), False

    def _on_frame(self, frame: Any) -> None:
        if type(frame) is DataChunk:  # Note [Data frames in place]
            self._on_data(frame)
            return
        kind = frame.WhichOneof("kind")
        if kind == "ack":
            self._on_ack(frame.ack)
        elif kind == "data":  # one the decoder left to protobuf
            self._on_data(_data_frame.from_message(frame))
        elif kind == "sync_done":
            p = self._requests.open(frame.sync_done.request_id)
            if p is not None:
                if frame.sync_done.error.code:
                    p.error = _errors.from_status(frame.sync_done.error)
                p.finish()
        elif kind == "error":
            self._on_error(frame.seq, frame.error)
        elif kind in ("profile", "shared_buffer", "session_memory_stats"):  # the answer itself
            answer = getattr(frame, kind)
            p = self._requests.open(answer.request_id)
            if p is not None:
                p.meta = answer
                p.finish()

    def _on_ack(self, ack: Any) -> None:
        last = ack.last_seq
        after = self._acked_seq
        if last <= after:
            return  # replayed after a resume: already applied
        self._acked_seq = last
        self._replay.acked(last)
        self._requests.acked(last)
        self._handles.on_ack(ack, after)

    def _on_data(self, d: DataChunk) -> None:
        self._transport.answered(d.request_id)
        p = self._requests.open(d.request_id)
        if p is None:
            return  # not ours to wait for, or a replayed chunk of a finished Get
        if d.where in _IN_PLACE:  # one chunk in the region, in place or on the socket
            p.finish_in_place(d.meta, d.total_bytes, d.size, d.lanes)
            return
        if d.meta is not None:  # a replay restarts at the first chunk: same bytes again
            p.meta = d.meta
            if d.total_bytes:
                p.buf = download_buffer(d.total_bytes)
        n = len(d.data)
        if n:
            if d.offset + n > len(p.buf):  # a daemon that did not say total_bytes
                p.buf = bytearray(p.buf)
                p.buf.extend(bytes(d.offset + n - len(p.buf)))
            p.buf[d.offset:d.offset + n] = d.data
        if d.last:
            p.finish()

    def _on_error(self, seq: int, e: Any) -> None:
        err = _errors.from_status(e.status)
        if e.request_id:
            self._transport.answered(e.request_id)
        if e.request_id:
            p = self._requests.open(e.request_id)
            if p is not None:
                p.error = err
                p.finish()
            return  # else: a replayed answer to a finished request
        self._requests.frame_error(seq, err, e.status.code, e.status.message)  # malformed batch

    # ------------------------------------------------------------------ resume

    def _resume(self, cause: Error) -> Optional[Error]:
        """Reattaches the session to a new stream; None on success, else why it failed."""
        deadline = time.monotonic() + self._resume_timeout
        delay = _FIRST_BACKOFF
        last = cause.reason
        while not self._stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return resume_failed(f"no tensord daemon answered at {self.address} within "
                                     f"{self._resume_timeout:g} s ({last})", _errors.UNAVAILABLE)
            with self._lock:
                resume = (self.session_id, self._secret, self._acked_seq)
            conn = Connection(self.address, self._credentials, self._metadata,
                              self._hello_frame(resume), wait_for_ready=False)
            with self._lock:
                self._attempt = conn
            if self._stop.is_set():
                conn.close()
                break
            try:
                first = conn.welcome(remaining)
            except (AttemptTimeout, grpc.RpcError, StopIteration) as e:
                conn.close()
                if isinstance(e, AttemptTimeout):
                    last = "the attempt timed out"
                    continue
                code, details = (rpc_code(e) if isinstance(e, grpc.RpcError) else
                                 (_errors.UNAVAILABLE, "the stream ended before Welcome"))
                if self._stop.is_set():
                    break
                if code != _errors.UNAVAILABLE:
                    return resume_failed(details, code)  # NOT_FOUND, DATA_LOSS, ...
                last = details
                self._stop.wait(min(delay, max(remaining, 0.0)))  # backoff; close() wakes it
                delay = min(delay * 2, _MAX_BACKOFF)
                continue
            failure = self._adopt(conn, first)
            if failure is not None:
                conn.close()
            return failure
        return ConnectionLost("the session is closed", code=_errors.CANCELLED, op="session")

    def _adopt(self, conn: Connection, first: Any) -> Optional[Error]:
        """Makes ``conn`` (whose first frame is ``first``) the session's stream."""
        w = first.welcome if first.WhichOneof("kind") == "welcome" else None
        if w is None or not w.resumed or w.session_id != self.session_id:
            return resume_failed("the daemon did not resume the session (it answered "
                                 f"{first.WhichOneof('kind')} for session "
                                 f"'{w.session_id if w else ''}')", _errors.FAILED_PRECONDITION)
        with self._lock:
            self._attempt = None
            if self._closing:
                return ConnectionLost("the session is closed", code=_errors.CANCELLED,
                                      op="session")
            resend = self._replay.resend_after(w.resumed_applied_seq)
            # before the resend, which may hold a Put by cross-memory attach or in the region
            problem = self._transport.resumed(w, bool(resend))
            if problem:
                return resume_failed(problem, _errors.DATA_LOSS)
            conn.start(resend)
            self._conn = conn
            self._resuming = False
            self.resumes += 1
            self._replies.notify_all()
            self._wake_flusher.notify_all()
        return None
