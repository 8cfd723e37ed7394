"""The transport of a session without shared memory (Note [Python transports] in
``_transport.py``): another host or user, ``shm=False`` or ``TENSORD_SHM=0``. Commands and
replies take the gRPC stream (``_connection``); tensor bytes of ``_bulk.MIN_BYTES`` or more the
bulk socket's lanes (``_bulk``) when they connect, big downloads into a ``LocalDownloadCache``
(Note [Download cache]); the rest, and all once the lanes failed, the stream's chunks."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from . import _bulk, _download_cache, _errors, _malloc
from ._options import DEFAULT_DOWNLOAD_CACHE_BYTES
from ._transport import PutHeader, Transport, stream_answer


class RemoteTransport(Transport):
    """The gRPC stream and the bulk socket of a session at ``session.address``."""

    def __init__(self, session: Any, welcome: Any) -> None:
        super().__init__(session)
        options = session._options
        self._welcome = welcome  # the bulk socket's port and token
        #: the bulk socket (``_bulk.py``), connected at the first big transfer
        self.lanes = _bulk.BulkLanes(session.address, options,
                                     secure=session._credentials is not None,
                                     tls=session.tls)
        size = options.download_cache_bytes
        if size is None:  # the client's own memory: no daemon quota counts it
            size = DEFAULT_DOWNLOAD_CACHE_BYTES
        self.cache = (_download_cache.LocalDownloadCache(session, size)
                      if size > 0 and self.lanes.wanted else None)
        if options.tune_malloc:  # the stream carries bytes
            _malloc.keep_transfer_buffers_mapped()

    def close(self) -> None:
        self.lanes.close()

    def _bulk_usable(self) -> bool:
        return self.lanes.usable(self._welcome)  # connects the first time

    # ------------------------------------------------------------------- bytes

    def upload(self, raw: memoryview, flat: Optional[np.ndarray],
               header: PutHeader) -> Tuple[int, int]:
        s = self._s
        bulk = flat is not None and raw.nbytes >= _bulk.MIN_BYTES and self._bulk_usable()
        with s._lock:
            handle = s._new_handle_locked()
            if bulk and self.lanes.state:  # not broken meanwhile
                return handle, s._exclusive_locked(
                    lambda: self._put_bulk_locked(raw, handle, header))
            return handle, self._upload_stream_locked(raw, handle, header)

    def download(self, handle: int, site: str, nbytes: Optional[int],
                 out: Optional[np.ndarray], maybe_big: bool) -> Tuple[Any, Any]:
        # For a size not known yet the daemon decides (big ones on the socket, small ones on
        # the stream), so numpy() of a fresh result costs no wait for its Ack.
        s = self._s
        bulk = (nbytes >= _bulk.MIN_BYTES if nbytes is not None else maybe_big and out is None
                ) and self._bulk_usable()
        with s._lock:
            s._check_open_locked()
            if bulk and self.lanes.state:  # not broken meanwhile
                return s._exclusive_locked(
                    lambda: self._get_bulk_locked(handle, site, nbytes, out))
            p = self._get_on_stream_locked(handle, site)
        return stream_answer(p, handle, out)

    def _put_bulk_locked(self, raw: memoryview, handle: int, header: PutHeader) -> int:
        """One Put whose ``raw`` bytes follow on the lanes; returns its seq once they are sent
        (then the kernel's: the caller may reuse the array). A failure poisons the handle on
        the daemon too. Lock held, transfer exclusive."""
        s = self._s
        n = raw.nbytes
        lanes = _bulk.lanes_for(n, self.lanes.connected)
        cmd = s._add_locked()
        p = cmd.put
        header.fill(p, handle)
        p.last = True
        p.payload.bulk.size = n
        if lanes > 1:
            p.payload.bulk.lanes = lanes
        s._flush_locked()  # the Put first; resent after a resume, it finds the same bytes
        self.lanes.io(f"upload of handle {handle}", n, lanes, _bulk.send(raw), s._lock)
        return cmd.seq

    def _get_bulk_locked(self, handle: int, site: str, nbytes: Optional[int],
                         out: Optional[np.ndarray]) -> Tuple[Any, Any]:
        """(TensorMeta, bytes) of ``handle``'s ``nbytes`` (None: not known yet), read from the
        lanes into ``out`` (a uint8 array of ``nbytes``) or a new array; raises the handle's
        error. The daemon may answer on the stream instead (under 1 MiB, or a device tensor).
        Lock held, transfer exclusive."""
        s = self._s
        connected = self.lanes.connected
        rid, p = s._request_locked()
        cmd = s._add_locked()
        p.seq = cmd.seq
        g = cmd.get
        g.handle, g.request_id, g.site = handle, rid, site
        g.into.bulk.SetInParent()
        if connected > 1:
            g.into.bulk.lanes = connected
        s._flush_locked()
        s._wait_locked(p, rid)
        if p.error is not None or p.span_size == 0:  # an error, or answered on the stream
            return stream_answer(p, handle, out)
        lanes = max(p.lanes, 1)
        if (p.span_size != p.total or (nbytes is not None and p.total != nbytes)
                or lanes > connected):
            self.lanes.drop()  # its bytes can no longer be matched to requests
            raise _errors.ProtocolError(f"the daemon answered the bulk Get of handle {handle} "
                                        f"with {p.span_size} of {p.total} bytes on {lanes} "
                                        f"lanes; {nbytes} were asked on {connected}", op="get")
        nbytes = p.total
        # Note [Download cache]: a new result goes into a kept buffer, leased to the array.
        cache = self.cache if out is None else None
        buffer = cache.take(nbytes) if cache is not None else None
        dst = (out if out is not None else cache.view(buffer, nbytes) if buffer is not None
               else np.empty(nbytes, dtype=np.uint8))
        try:
            self.lanes.io(f"download of handle {handle}", nbytes, lanes,
                          _bulk.receive(dst, nbytes), s._lock)
        except BaseException:
            if buffer is not None:
                cache.give_back(buffer)
            raise
        return p.meta, (cache.lease(buffer, nbytes) if buffer is not None else dst)
