"""The same-host transport (Note [Python transports] in ``_transport.py``; its paths, in the
order tried: docs/protocol.md "Where bytes go"): the session's shared-memory region (``_shm``)
with its command ring (Note [Python command ring]) and mailbox (Note [Python mailbox]),
cross-memory attach (``_cma``), shared buffers (``_shared``), the download cache of shared
buffers (Note [Download cache]) and the transport's staging buffer (Note [Staging buffer]).
Uploads of ``_shm.MIN_BYTES`` or more take a shared buffer's one Put, else cross-memory attach,
else the staging buffer; downloads a shared buffer (``out=`` or the cache's), else the staging
buffer; the rest the stream."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _cma, _download_cache, _dtype, _errors, _shm, _staging
from ._options import DEFAULT_DOWNLOAD_CACHE_BYTES
from ._transport import PutHeader, Transport, stream_answer

CMA_MIN_BYTES = 1 << 20  # from here an upload goes by cross-memory attach when it works


class LocalTransport(Transport):
    """A same-host session's transport over its mapped ``region`` (a ``_shm.Region``)."""

    shares_memory = True

    def __init__(self, session: Any, welcome: Any, region: _shm.Region) -> None:
        super().__init__(session)
        options = session._options
        self.region = region
        #: this process's cross-memory-attach binding (``_cma.py``)
        self.cma = _cma.CmaBinding(options.cma)
        self.cma.bind(welcome)
        size = options.download_cache_bytes
        if size is None:  # idle shared buffers count in a user's quota: off under one
            size = 0 if welcome.quota_bytes else DEFAULT_DOWNLOAD_CACHE_BYTES
        self.cache = _download_cache.DownloadCache(session, size) if size > 0 else None
        self.staging = _staging.Staging(session, welcome.quota_bytes)

    # ---------------------------------------------------------------- commands

    def send(self, frame: Optional[bytes]) -> None:
        ring = self.region.ring
        if frame is not None and ring is not None and ring.send(self._s, frame):
            return  # Note [Python command ring]
        super().send(frame)

    def want_ack(self, seq: int) -> None:
        if self.region.ring is not None:  # the daemon holds back some Acks: Note [Held acks]
            self.region.ring.want_ack(seq)

    def answered(self, request_id: int) -> None:
        if request_id == self.region.notify_rid:
            _shm.wake_mailbox(self.region)

    def ended(self) -> None:
        _shm.wake_mailbox(self.region)

    def resumed(self, welcome: Any, resent: bool) -> str:
        """Binds cross-memory attach again (the daemon dropped the binding; a resent Put may
        use it) and keeps the region, or maps the resumed session's new one when no transfer
        (which may wait in its mailbox) is in flight."""
        s = self._s
        self.cma.rebind(welcome)
        old = self.region
        desc = welcome.shm if welcome.HasField("shm") else None
        if desc is None or not old.matches(desc):
            if s._busy is not None:
                return ("the daemon's shared-memory region changed while a transfer through "
                        "it was in flight")
            region = _shm.Region.open(desc, s._options) if desc is not None else None
            if region is None:
                return "the resumed session's shared-memory region cannot be mapped here"
            self.region = region
        if resent and self.region.ring is not None:
            self.region.ring.after_resend(s._sent_seq)  # Note [Python command ring]
        return ""

    # ------------------------------------------------------------------- bytes

    def upload(self, raw: memoryview, flat: Optional[np.ndarray],
               header: PutHeader) -> Tuple[int, int]:
        s = self._s
        total = raw.nbytes
        big = flat is not None and total >= _shm.MIN_BYTES
        where = s._find_shared(flat.ctypes.data, total) if big and s._shared_ranges else None
        # By cross-memory attach a Put returns once the daemon has read the bytes, after all
        # queued before it: only when the daemon has caught up (else staging returns at once)
        if (where is None and big and total >= CMA_MIN_BYTES and self.cma.bound
                and max(s._acked_seq, s._requests.answered_seq) >= s._seq and self.cma_usable()):
            where = flat.ctypes.data  # the daemon reads this process's memory
        with s._lock:
            if where is not None:  # a shared buffer's (region, offset), or an address
                handle = s._new_handle_locked()
                return handle, self._put_in_place_locked(handle, header, where, total)
            staged = s._exclusive_locked(
                lambda: self.staging.upload_locked(flat, header)) if big else None
            if staged is not None:
                return staged
            handle = s._new_handle_locked()
            return handle, self._upload_stream_locked(raw, handle, header)

    def download(self, handle: int, site: str, nbytes: Optional[int],
                 out: Optional[np.ndarray], maybe_big: bool) -> Tuple[Any, Any]:
        s, cache = self._s, self.cache
        big = nbytes is not None and nbytes >= _shm.MIN_BYTES
        # Note [Download cache]: a big numpy() goes into a kept shared buffer, leased to it
        buffer = (cache.take(nbytes) if big and out is None and cache is not None
                  and nbytes >= _download_cache.MIN_BYTES else None)
        mine = buffer is not None
        where = (s._find_shared(buffer._address if mine else out.ctypes.data, nbytes)
                 if mine or big and out is not None and s._shared_ranges else None)
        if where is not None:  # one Get naming the shared buffer
            try:
                with s._lock:
                    meta = self._get_shared_locked(handle, site, where, nbytes)
            except BaseException:
                if mine:
                    cache.give_back(buffer)
                raise
            return meta, (cache.lease(buffer, nbytes) if mine else out)
        r = self.region
        with s._lock:  # Note [Python mailbox]: item() without gRPC's threads
            s._check_open_locked()
            if big or out is None and (nbytes is None and maybe_big or _shm.mailbox_free(r)):
                staged = s._exclusive_locked(
                    lambda: self.staging.download_locked(r, handle, nbytes, site, out))
                if staged is not None:
                    return staged
            p = self._get_on_stream_locked(handle, site)
        return stream_answer(p, handle, out)

    def _get_shared_locked(self, handle: int, site: str, where: Tuple[int, int],
                           nbytes: int) -> Any:
        """One Get of the ``nbytes`` of ``handle`` into ``where`` (shared buffer, offset);
        returns its TensorMeta once the bytes are there, raises the handle's error."""
        s = self._s
        s._check_open_locked()
        s._wait_not_busy_locked()
        rid, p = _shm.ask_locked(s, handle, site, where[0], where[1], nbytes)
        s._flush_locked()
        s._wait_locked(p, rid)
        if p.error is not None:
            raise _errors.fresh(p.error)
        if p.total != nbytes or p.span_size != nbytes:
            raise _errors.ProtocolError(f"the daemon answered the shared-buffer Get of handle "
                                        f"{handle} with {p.span_size} of {p.total} bytes; "
                                        f"{nbytes} were asked", op="get")
        return p.meta

    def _put_in_place_locked(self, handle: int, header: PutHeader, where: Any,
                             nbytes: int) -> int:
        """One Put of ``nbytes`` that the daemon copies in place: ``where`` is (shared buffer,
        offset), or an address in this process it reads by cross-memory attach. Returns once
        the daemon acknowledged it, i.e. copied them (the lifetime rule of ``_shared``)."""
        s = self._s
        cmd = s._add_locked()
        p = cmd.put
        header.fill(p, handle)
        p.last = True
        if isinstance(where, tuple):
            span = p.payload.region
            (span.region, span.offset), span.size = where, nbytes
        else:
            p.payload.cma.address, p.payload.cma.size = where, nbytes
        seq = cmd.seq
        s._flush_locked()
        s._want_ack_locked(seq)
        s._replies.wait_for(lambda: s._acked_seq >= seq or s._broken is not None)
        s._check_open_locked()
        return seq

    def cma_usable(self) -> bool:
        """Whether uploads may go by cross-memory attach: the daemon offered it (Welcome.cma),
        bound the session to this process (``_cma.py``; it refuses another user or a pid it
        cannot see), this is that process, and a 4-byte probe read back by it is right (tried
        once)."""
        return self.cma.usable(self._cma_probe_works)

    def _cma_probe_works(self) -> bool:
        """A 4-byte tensor uploaded on the stream, read back by cross-memory attach: a Get's
        failure is its own answer (a refused Put would poison its handle and be the next
        synchronize's error)."""
        s = self._s
        if not s.welcome.cma or not self.cma.bound:
            return False
        sent = np.array([1.25], dtype=np.float32)
        back = np.zeros(1, dtype=np.float32)
        handle, _ = s.put(sent, _dtype.float32.proto, (1,), "cpu", False, "")
        try:
            with s._lock:
                s._wait_not_busy_locked()
                rid, p = s._request_locked()
                g = s._add_locked().get
                g.handle, g.request_id = handle, rid
                g.into.cma.address, g.into.cma.size = back.ctypes.data, back.nbytes
                s._flush_locked()
                s._wait_locked(p, rid)
            return p.error is None and p.span_size == back.nbytes and back[0] == sent[0]
        finally:
            s.release(handle)
