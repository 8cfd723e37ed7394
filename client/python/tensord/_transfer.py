"""Uploads and downloads of tensor bytes (part of ``Session``): ``Put`` chunks and ``Get``
replies on the stream, through the session's shared-memory region (``_shm``) for big tensors
when the daemon is on this host, one ``Put``/``Get`` naming a shared buffer (``_shared``)
when the bytes lie in one, or their bytes on the bulk socket (``_bulk``) for big tensors
without a region."""

from __future__ import annotations

import collections
import threading
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _bulk, _download_cache, _errors, _shm, _wire

_BIG_CHUNK = 64 << 10  # Put chunks at least this big are sent without an extra copy
_CMA_MIN_BYTES = 1 << 20  # from here an upload goes by cross-memory attach when it works
_UPLOAD_WINDOW = 16 << 20  # Put bytes of an upload sent, not yet acknowledged: Note [Upload window]


class Transfers:
    """Put/Get of a ``Session`` (called by tensors; the lock is taken here)."""

    def put(self, data: Union[np.ndarray, bytes], dtype_proto: int, shape: Sequence[int],
            device: str, requires_grad: bool, site: str,
            wrapped: bool = False) -> Tuple[int, int]:
        """Uploads ``data`` (already in wire layout: an array, or bytes) into a new handle, in
        chunks of at most ``chunk_bytes``; returns (handle, seq of the last chunk). ``wrapped``:
        a 0-dim Python number (one small chunk; Put.wrapped_number)."""
        if isinstance(data, bytes):
            flat = None
            raw = memoryview(data)
        else:
            flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            raw = memoryview(flat)
        total = raw.nbytes
        where = None  # (region, offset) of a shared buffer holding the bytes
        if self._shared_ranges and flat is not None and total >= _shm.MIN_BYTES:
            where = self._find_shared(flat.ctypes.data, total)
        # Cross-memory attach (_shared.py): the daemon reads the array itself, one copy.
        # It returns once the daemon has read the bytes, i.e. after everything queued before
        # it: only when the daemon has caught up (else the region's slots return at once).
        cma = (total >= _CMA_MIN_BYTES and where is None and flat is not None
               and self._cma.bound
               and max(self._acked_seq, self._requests.answered_seq) >= self._seq
               and self._cma_usable())
        bulk = (self._shm is None and flat is not None and total >= _bulk.MIN_BYTES
                and self._bulk.usable(self.welcome))
        with self._lock:
            self._check_open_locked()
            # Another thread's exclusive transfer ends before this handle is allocated: from
            # here to the Put that creates it the lock is held (or this thread is the one
            # busy), so handles reach the daemon in increasing order and no command of ours
            # falls between that transfer's chunks.
            self._wait_not_busy_locked()
            handle = self._next_handle
            self._next_handle += 1
            if where is not None or cma or (bulk and self._bulk.state):
                def first(p: Any) -> None:
                    p.handle = handle
                    p.dtype = dtype_proto
                    p.shape.extend(shape)
                    p.device = device
                    p.requires_grad = requires_grad
                    p.site = site
                if where is not None:
                    return handle, self._put_shared_locked(where, total, first)
                if cma:
                    return handle, self._put_cma_locked(flat.ctypes.data, total, first)
                return handle, self._exclusive_locked(lambda: self._put_bulk_locked(raw, first))
            if self._shm is not None and total >= _shm.MIN_BYTES and flat is not None:
                def fields(cmd: Any, offset: int, n: int, last: bool) -> None:
                    p = cmd.put
                    p.handle = handle
                    p.offset = offset
                    p.last = last
                    if offset == 0:
                        p.dtype = dtype_proto
                        p.shape.extend(shape)
                        p.device = device
                        p.requires_grad = requires_grad
                        p.site = site
                return handle, self._exclusive_locked(lambda: _shm.upload(self, flat, fields))
            if total <= self.chunk_bytes and total < _BIG_CHUNK:  # one small chunk
                if self._frame_bytes + total > self._max_bytes and self._count_locked():
                    self._flush_locked()
                if self._open is not None:
                    self._commit_locked()
                self._seq = seq = self._seq + 1
                entry = _wire.put_header_entry(seq, handle, dtype_proto, shape, device, 0, True,
                                               requires_grad, site, total, wrapped) + raw
                self._entries.append(entry)
                self._frame_bytes += len(entry)
                self._after_add_locked()
                return handle, seq
            self._busy = threading.get_ident()  # no Release between chunks
            try:
                seq = self._put_stream_locked(raw, handle, dtype_proto, shape, device,
                                              requires_grad, site)
            finally:
                self._busy = None
            self._after_add_locked()
        return handle, seq

    def _put_stream_locked(self, raw: memoryview, handle: int, dtype_proto: int,
                           shape: Sequence[int], device: str, requires_grad: bool,
                           site: str) -> int:
        """Appends the Put chunks of ``raw`` for the stream; returns the last one's seq."""
        total = raw.nbytes
        step = self.chunk_bytes
        offset = 0
        inflight: "collections.deque[Tuple[int, int]]" = collections.deque()  # (seq, bytes)
        inflight_bytes = 0
        while True:
            chunk = raw[offset:offset + step]
            n = len(chunk)
            big = n >= _BIG_CHUNK
            # Big chunks share frames of up to _max_upload_frame: grpcio's cost is per message
            bound = self._max_upload_frame if big else self._max_bytes
            if self._frame_bytes + n > bound and self._count_locked():
                self._flush_locked()
                if inflight_bytes > _UPLOAD_WINDOW:
                    inflight_bytes = self._wait_for_acks_locked(inflight, inflight_bytes)
            last = offset + n >= total
            if self._open is not None:
                self._commit_locked()
            self._seq = seq = self._seq + 1
            if offset == 0:
                header = _wire.put_header_entry(seq, handle, dtype_proto, shape, device, 0, last,
                                                requires_grad, site, n)
            else:
                header = _wire.put_header_entry(seq, handle, 0, (), "", offset, last, False, "",
                                                n)
            offset += n
            self._frame_bytes += n + 64
            if big:  # joined (copied) into its frame at the flush, before put() returns
                self._entries.append(header)
                self._entries.append(chunk)
                inflight.append((seq, n))
                inflight_bytes += n
            else:
                self._entries.append(header + chunk)
            if last:
                if big:
                    self._flush_locked()
                return seq

    def _wait_for_acks_locked(self, inflight: "collections.deque[Tuple[int, int]]",
                              inflight_bytes: int) -> int:
        """Note [Upload window]: waits until the daemon acknowledged the oldest chunks of an
        upload, leaving half the window in flight; returns the bytes still in flight. Without
        it the caller's thread, holding the GIL, queues a whole tensor's frames before the
        receiver thread gets to apply an Ack: every frame stays referenced (for a resume) until
        the end, so each upload allocates, and page-faults in, fresh memory for all of them."""
        wait_seq = 0
        while inflight and inflight_bytes > _UPLOAD_WINDOW // 2:
            wait_seq, n = inflight.popleft()
            inflight_bytes -= n
        self._want_ack_locked(wait_seq)
        self._replies.wait_for(lambda: self._acked_seq >= wait_seq or self._broken is not None)
        return inflight_bytes

    def _put_bulk_locked(self, raw: memoryview, fields: Any) -> int:
        """One Put (``fields(put)`` fills it) whose ``raw`` bytes follow on the lanes; returns
        its seq once they are sent (then the kernel's: the caller may reuse the array). A
        failure poisons the handle on the daemon too. Lock held, transfer exclusive."""
        n = raw.nbytes
        lanes = _bulk.lanes_for(n, self._bulk.connected)
        cmd = self._add_locked()
        p = cmd.put
        fields(p)
        p.last = True
        p.payload.bulk.size = n
        if lanes > 1:
            p.payload.bulk.lanes = lanes
        seq = cmd.seq
        handle = p.handle
        self._flush_locked()  # the Put first; resent after a resume, it finds the same bytes
        self._bulk.io(f"upload of handle {handle}", n, lanes, _bulk.send(raw), self._lock)
        return seq

    def _get_bulk_locked(self, handle: int, site: str, nbytes: Optional[int],
                         out: Optional[np.ndarray]) -> Tuple[Any, Any]:
        """(TensorMeta, bytes) of ``handle``'s ``nbytes`` (None: not known yet), read from the
        lanes into ``out`` (a uint8 array of ``nbytes``) or a new array; raises the handle's
        error. The daemon may answer on the stream instead (under 1 MiB, or a device tensor).
        Lock held, transfer exclusive."""
        connected = self._bulk.connected
        rid, p = self._request_locked()
        cmd = self._add_locked()
        p.seq = cmd.seq
        g = cmd.get
        g.handle, g.request_id, g.site = handle, rid, site
        g.into.bulk.SetInParent()
        if connected > 1:
            g.into.bulk.lanes = connected
        self._flush_locked()
        self._wait_locked(p, rid)
        if p.error is not None or p.span_size == 0:  # an error, or answered on the stream
            return self._stream_answer(p, handle, out)
        lanes = max(p.lanes, 1)
        if (p.span_size != p.total or (nbytes is not None and p.total != nbytes)
                or lanes > connected):
            self._bulk.drop()  # its bytes can no longer be matched to requests
            raise _errors.ProtocolError(f"the daemon answered the bulk Get of handle {handle} "
                                        f"with {p.span_size} of {p.total} bytes on {lanes} "
                                        f"lanes; {nbytes} were asked on {connected}", op="get")
        nbytes = p.total
        # Note [Download cache]: a new result goes into a kept buffer, leased to the array.
        cache = self._download_cache if out is None else None
        buffer = cache.take(nbytes) if cache is not None else None
        dst = (out if out is not None else cache.view(buffer, nbytes) if buffer is not None
               else np.empty(nbytes, dtype=np.uint8))
        try:
            self._bulk.io(f"download of handle {handle}", nbytes, lanes,
                          _bulk.receive(dst, nbytes), self._lock)
        except BaseException:
            if buffer is not None:
                cache.give_back(buffer)
            raise
        return p.meta, (cache.lease(buffer, nbytes) if buffer is not None else dst)

    def get(self, handle: int, site: str, nbytes: Optional[int] = None,
            out: Optional[np.ndarray] = None, maybe_big: bool = False) -> Tuple[Any, Any]:
        """Downloads a handle's values: (TensorMeta, little-endian bytes). Raises its error.
        ``nbytes`` (when the caller knows the size) lets big tensors use shared memory.
        ``out`` (a C-contiguous uint8 array of ``nbytes``, which must then be given) receives
        the bytes and is returned in their place; in a shared buffer, that is the one copy.
        ``maybe_big``: a size not known yet may be large (``numpy()``, not ``item()``), so on a
        same-host session it is asked for through the region's slots, which learn the size
        from the first answer, rather than on the stream."""
        big = nbytes is not None and nbytes >= _shm.MIN_BYTES
        if nbytes is None and maybe_big and out is None and self._shm is not None:
            with self._lock:
                self._check_open_locked()
                return self._exclusive_locked(
                    lambda: _shm.download(self, handle, None, site))
        if out is not None and big and self._shared_ranges:
            where = self._find_shared(out.ctypes.data, nbytes)
            if where is not None:
                with self._lock:
                    self._check_open_locked()
                    return self._get_shared_locked(handle, site, where, nbytes), out
        if out is None and self._download_cache is not None and (
                self._download_cache.shared) and nbytes is not None and (
                nbytes >= _download_cache.MIN_BYTES):
            got = self._get_cached(handle, site, nbytes)
            if got is not None:
                return got
        if self._shm is not None and big:
            with self._lock:
                self._check_open_locked()
                return self._exclusive_locked(
                    lambda: _shm.download(self, handle, nbytes, site, out))
        # The bulk socket: for a size not known yet the daemon decides (big ones on the socket,
        # small ones on the stream), so numpy() of a fresh result costs no wait for its Ack.
        if self._shm is None and (nbytes >= _bulk.MIN_BYTES if nbytes is not None
                                  else maybe_big and out is None) and self._bulk.usable(self.welcome):
            with self._lock:
                self._check_open_locked()
                if self._bulk.state:  # not broken meanwhile
                    return self._exclusive_locked(
                        lambda: self._get_bulk_locked(handle, site, nbytes, out))
        if out is None and self._shm is not None and self._shm.word:
            with self._lock:  # Note [Python mailbox]: item() without gRPC's threads
                self._check_open_locked()
                if _shm.mailbox_free(self):
                    return self._exclusive_locked(
                        lambda: _shm.download(self, handle, nbytes, site))
        with self._lock:
            rid, p = self._request_locked()
            if self._busy is not None:
                self._wait_not_busy_locked()
            if self._open is not None:
                self._commit_locked()
            self._seq = seq = p.seq = self._seq + 1
            self._entries.append(_wire.get_entry(seq, handle, rid, site))
            self._frame_bytes += 64
            self._flush_locked()
            self._wait_locked(p, rid)
        return self._stream_answer(p, handle, out)

    @staticmethod
    def _stream_answer(p: Any, handle: int, out: Optional[np.ndarray]) -> Tuple[Any, Any]:
        """A Get answered by Data chunks on the stream: (TensorMeta, bytes, or ``out`` holding
        them); raises the handle's error."""
        if p.error is not None:
            raise _errors.fresh(p.error)
        if out is None:
            return p.meta, p.buf
        if len(p.buf) != out.nbytes:
            raise _errors.ProtocolError(f"the daemon sent {len(p.buf)} bytes of handle {handle}, "
                                        f"its metadata says {out.nbytes}", op="get")
        out[:] = np.frombuffer(p.buf, dtype=np.uint8)
        return p.meta, out

    def _get_cached(self, handle: int, site: str, nbytes: int) -> Optional[Tuple[Any, Any]]:
        """Note [Download cache]: (TensorMeta, uint8 array over a cached shared buffer), or
        None when no buffer could be had (the caller takes the region's slots)."""
        cache = self._download_cache
        buffer = cache.take(nbytes)
        if buffer is None:
            return None
        where = self._find_shared(buffer._address, nbytes)  # taken: still registered
        try:
            with self._lock:
                self._check_open_locked()
                meta = self._get_shared_locked(handle, site, where, nbytes)
        except BaseException:
            cache.give_back(buffer)
            raise
        return meta, cache.lease(buffer, nbytes)

    def empty_download_cache(self) -> None:
        """Frees the shared buffers kept for big downloads (Note [Download cache]); arrays
        returned earlier stay valid."""
        if self._download_cache is not None:
            self._download_cache.clear()

    def peek_nbytes(self, handle: int) -> Optional[int]:
        """The byte size of ``handle`` if its Ack already arrived (no waiting)."""
        return self._handles.nbytes(handle)
