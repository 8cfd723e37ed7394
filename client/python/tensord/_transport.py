"""Note [Python transports]: how a session moves commands and tensor bytes (docs/transport.md
"Two transports"). A ``Session`` holds one ``Transport`` (``_transport``), chosen once at the
Welcome (``_session._transport_for``): ``LocalTransport`` (``_local_transport.py``) when the
daemon offered a shared-memory region this process could map, else ``RemoteTransport``
(``_remote_transport.py``). Session code never asks which paths exist (a region, cross-memory
attach, a bulk socket): it asks its transport (the methods below). Both take every reply on
the session's gRPC stream (``_connection``), and both fall back to the stream's Put chunks and
Data replies (this class's ``_upload_stream_locked``, ``_get_on_stream_locked``).
"""

from __future__ import annotations

import collections
import threading
from typing import Any, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from . import _errors, _wire

BIG_CHUNK = 64 << 10  # Put chunks at least this big are sent without an extra copy
UPLOAD_WINDOW = 16 << 20  # Put bytes of an upload sent, not yet acknowledged: Note [Upload window]


class PutHeader(NamedTuple):
    """What the first Put of an upload says besides its bytes."""

    dtype: int
    shape: Sequence[int]
    device: str
    requires_grad: bool
    site: str

    def fill(self, p: Any, handle: int) -> None:
        """Fills the Put message ``p`` (its first chunk, or its only one) for ``handle``."""
        p.handle = handle
        p.dtype = self.dtype
        p.shape.extend(self.shape)
        p.device = self.device
        p.requires_grad = self.requires_grad
        p.site = self.site


_LATER_CHUNK = PutHeader(0, (), "", False, "")  # a Put after the first says only its offset


class Transport:
    """The interface (see the module docstring); the methods shared by both kinds move bytes
    on the stream. Each method taking the session's lock says so; ``send`` and ``want_ack``
    are called with it held."""

    #: True for a same-host session (shared buffers, ``SharedBuffer.is_shared``, are possible)
    shares_memory = False
    #: the download cache (``_download_cache``), or None
    cache: Any = None

    def __init__(self, session: Any) -> None:
        self._s = session

    # ------------------------------------------------------------ the interface

    def send(self, frame: Optional[bytes]) -> None:
        """Queues ``frame`` (None: end the stream) on the session's stream. Bounded queue:
        backpressure on huge uploads; gRPC's sender never takes the session's lock. A frame
        that cannot be sent (the stream failed) stays in the session's replay log."""
        s = self._s
        conn = s._conn
        while not conn.put(frame, 0.5):
            if s._broken is not None or conn.dead:
                return

    def want_ack(self, seq: int) -> None:
        """A thread is about to wait for the Ack of command ``seq`` (not acknowledged yet)."""

    def upload(self, raw: memoryview, flat: Optional[np.ndarray],
               header: PutHeader) -> Tuple[int, int]:
        """Uploads ``raw`` (``flat``: the same bytes as a uint8 array, or None for ``bytes``)
        into a new handle; returns (handle, seq of its last command). Takes the lock."""
        raise NotImplementedError

    def download(self, handle: int, site: str, nbytes: Optional[int],
                 out: Optional[np.ndarray], maybe_big: bool) -> Tuple[Any, Any]:
        """``Session.get``: (TensorMeta, bytes or ``out``); raises the handle's error. Takes
        the lock."""
        raise NotImplementedError

    def answered(self, request_id: int) -> None:
        """The stream answered ``request_id`` (the receiver, lock held)."""

    def ended(self) -> None:
        """The session is over: wake whoever waits on this transport's own paths (lock held)."""

    def resumed(self, welcome: Any, resent: bool) -> str:
        """The session resumed on a new stream whose Welcome is ``welcome``; ``resent``: batches
        are being sent again. Lock held. Returns why the session cannot go on, or ''."""
        return ""

    def close(self) -> None:
        """At the session's end (no lock held)."""

    # ------------------------------------------------------- the stream's bytes

    def _upload_stream_locked(self, raw: memoryview, handle: int, h: PutHeader) -> int:
        """Appends the Put chunks of ``raw`` (``chunk_bytes`` each) to the batch; returns the
        last one's seq. No Release falls between the chunks (``_busy``)."""
        s = self._s
        total = raw.nbytes
        step = s.chunk_bytes
        offset = 0
        inflight: "collections.deque[Tuple[int, int]]" = collections.deque()  # (seq, bytes)
        inflight_bytes = 0
        s._busy = threading.get_ident()
        try:
            while True:
                chunk = raw[offset:offset + step]
                n = len(chunk)
                big = n >= BIG_CHUNK
                # Big chunks share frames up to _max_upload_frame: grpcio's cost is per message
                bound = s._max_upload_frame if big else s._max_bytes
                if s._frame_bytes + n > bound and s._count_locked():
                    s._flush_locked()
                    if inflight_bytes > UPLOAD_WINDOW:
                        inflight_bytes = self._wait_for_acks_locked(inflight, inflight_bytes)
                last = offset + n >= total
                if s._open is not None:
                    s._commit_locked()
                s._seq = seq = s._seq + 1
                d = h if offset == 0 else _LATER_CHUNK
                header = _wire.put_header_entry(seq, handle, d.dtype, d.shape, d.device, offset,
                                                last, d.requires_grad, d.site, n)
                offset += n
                s._frame_bytes += n + 64
                if big:  # joined (copied) into its frame at the flush, before put() returns
                    s._entries.append(header)
                    s._entries.append(chunk)
                    inflight.append((seq, n))
                    inflight_bytes += n
                else:
                    s._entries.append(header + chunk)
                if last:
                    if big:
                        s._flush_locked()
                    break
        finally:
            s._busy = None
        s._after_add_locked()
        return seq

    def _wait_for_acks_locked(self, inflight: "collections.deque[Tuple[int, int]]",
                              inflight_bytes: int) -> int:
        """Note [Upload window]: waits until the daemon acknowledged the oldest chunks of an
        upload, leaving half the window in flight; returns the bytes still in flight. Without
        it the caller's thread, holding the GIL, queues a whole tensor's frames before the
        receiver thread gets to apply an Ack: every frame stays referenced (for a resume) until
        the end, so each upload allocates, and page-faults in, fresh memory for all of them."""
        s = self._s
        wait_seq = 0
        while inflight and inflight_bytes > UPLOAD_WINDOW // 2:
            wait_seq, n = inflight.popleft()
            inflight_bytes -= n
        s._want_ack_locked(wait_seq)
        s._replies.wait_for(lambda: s._acked_seq >= wait_seq or s._broken is not None)
        return inflight_bytes

    def _get_on_stream_locked(self, handle: int, site: str) -> Any:
        """Sends a Get answered by Data chunks on the stream and waits for its answer (for
        ``stream_answer``, once the lock is released)."""
        s = self._s
        rid, p = s._request_locked()
        if s._busy is not None:
            s._wait_not_busy_locked()
        if s._open is not None:
            s._commit_locked()
        s._seq = seq = p.seq = s._seq + 1
        s._entries.append(_wire.get_entry(seq, handle, rid, site))
        s._frame_bytes += 64
        s._flush_locked()
        s._wait_locked(p, rid)
        return p


def stream_answer(p: Any, handle: int, out: Optional[np.ndarray]) -> Tuple[Any, Any]:
    """The answer ``p`` of a Get (Data chunks on the stream, or an error): (TensorMeta, bytes,
    or ``out`` holding them); raises the handle's error."""
    if p.error is not None:
        raise _errors.fresh(p.error)
    if out is None:
        return p.meta, p.buf
    if len(p.buf) != out.nbytes:
        raise _errors.ProtocolError(f"the daemon sent {len(p.buf)} bytes of handle {handle}, "
                                    f"its metadata says {out.nbytes}", op="get")
    out[:] = np.frombuffer(p.buf, dtype=np.uint8)
    return p.meta, out
