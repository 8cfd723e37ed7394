"""Note [Staging buffer]: the local transport's own shared buffer (``_shared.py``) for bytes in
plain memory that no one-copy path takes (docs/protocol.md "Where bytes go"): uploads that
cross-memory attach cannot take (unbound, refused, a forked child) or would hold up (commands
not yet acknowledged), copied in and sent at once as ``Put{payload: region}`` (the buffer is
rewritten only after that Put's Ack, so a resent Put still finds its bytes); downloads of a
size not known yet, into plain memory, or a value read (``Get{into: region}``s, each copied
out, the first announced in the mailbox when it is free: Note [Python mailbox]).

One buffer per session, made at first need (``FIRST_BYTES``), grown to the size class of what
a transfer asks up to ``MAX_BYTES`` (or a sixteenth of a quota): larger transfers go in pieces.
A grown buffer's predecessor is released after every command that named it. A refused
allocation keeps the buffer there is, or takes the stream; a refusal other than the quota's
turns staging off. Used with the session's lock held and the transfer exclusive.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _errors, _shm
from ._download_cache import size_class
from ._errors import ProtocolError

MAX_BYTES = 64 << 20
FIRST_BYTES = 1 << 20  # what a download of a size not known yet asks for first


class Staging:
    """The staging buffer of session ``session`` (see the module docstring)."""

    def __init__(self, session: Any, quota_bytes: int) -> None:
        self._s = session
        self._max = min(MAX_BYTES, max(FIRST_BYTES, quota_bytes >> 4)) if quota_bytes else MAX_BYTES
        self.buffer: Any = None  # a SharedBuffer, None until a transfer needs one
        self._bytes: Optional[np.ndarray] = None  # its uint8 view
        self._where = (0, 0)  # its (region, offset) in Put/Get spans
        self._read_seq = 0  # the last Put that reads it (rewritten only once acknowledged)

    def _take_locked(self, nbytes: int) -> bool:
        """A buffer of ``min(nbytes, MAX_BYTES)`` bytes or more, else the one there is;
        False when there is none."""
        b = self.buffer
        want = min(nbytes, self._max)
        if (b is not None and b.nbytes >= want) or self._max == 0:
            return b is not None
        size = min(self._max, size_class(want) if want > FIRST_BYTES else FIRST_BYTES)
        from ._shared import SharedBuffer  # _shared imports the session's modules
        try:
            new = SharedBuffer(size, self._s, locked=True)
        except _errors.Error as e:
            if not isinstance(e, _errors.OutOfMemoryError):
                self._max = 0  # shared buffers are off on this daemon
            return b is not None
        if b is not None:  # released after the commands that named it (one order)
            b._freed = True
            self._s._free_shared(b.region, from_finalizer=True)
        self.buffer, self._read_seq = new, 0
        self._bytes = new.numpy(new.nbytes, np.uint8)
        self._where = self._s._find_shared(new._address, new.nbytes)
        return True

    def upload_locked(self, flat: np.ndarray, header: Any) -> Optional[Tuple[int, int]]:
        """Sends ``flat`` (uint8, C-contiguous) as the Put chunks of a new handle through the
        buffer; returns (handle, the last chunk's seq), or None (no buffer: the caller takes
        the stream). ``header`` (a ``PutHeader``) fills the first chunk."""
        s = self._s
        total = flat.nbytes
        if not self._take_locked(total):
            return None
        handle = s._new_handle_locked()
        offset = 0
        while True:
            n = min(self.buffer.nbytes, total - offset)
            wait = self._read_seq
            if wait > s._acked_seq:  # the previous Put still reads the buffer
                s._want_ack_locked(wait)
                s._replies.wait_for(lambda: s._acked_seq >= wait or s._broken is not None)
                s._check_open_locked()
            self._bytes[:n] = flat[offset:offset + n]
            cmd = s._add_locked()
            p = cmd.put
            if offset == 0:
                header.fill(p, handle)
            else:
                p.handle, p.offset = handle, offset
            p.last = offset + n >= total
            span = p.payload.region
            (span.region, span.offset), span.size = self._where, n
            self._read_seq = cmd.seq
            s._flush_locked()
            offset += n
            if p.last:
                return handle, cmd.seq

    def download_locked(self, region: Any, handle: int, total: Optional[int], site: str,
                        out: Optional[np.ndarray]) -> Optional[Tuple[Any, np.ndarray]]:
        """Downloads ``handle`` through the buffer into ``out`` (uint8, ``total`` bytes) or a
        new array: (TensorMeta, the array), or None (no buffer: the caller takes the stream).
        Raises the handle's error. ``total`` None: not known yet, the first answer says it.
        The first Get is announced in ``region``'s mailbox when it is free."""
        s = self._s
        if not self._take_locked(FIRST_BYTES if total is None else total):
            return None
        notify = _shm.mailbox_free(region)
        meta, done = None, 0
        while True:
            rid, p = _shm.ask_locked(s, handle, site, self._where[0], self._where[1],
                                     self.buffer.nbytes, done, notify)
            s._flush_locked()
            if notify:
                region.notify_rid = rid
                _shm.await_notified(s, region, p, rid, self._where)
                notify = False
            else:
                s._wait_locked(p, rid)
            if p.error is not None:
                raise _errors.fresh(p.error)
            if total is None:
                total = p.total
            if (p.total != total or p.span_size > self.buffer.nbytes
                    or p.span_size == 0 < total - done):
                raise ProtocolError(f"the daemon answered a Get of handle {handle} with "
                                    f"{p.span_size} of {p.total} bytes; {total} were "
                                    "expected", op="get")
            meta = meta if meta is not None else p.meta
            if out is None:
                out = np.empty(total, dtype=np.uint8)
            out[done:done + p.span_size] = self._bytes[:p.span_size]
            done += p.span_size
            if done >= total:
                return meta, out
            self._take_locked(total - done)  # grows (if it can) for the rest
