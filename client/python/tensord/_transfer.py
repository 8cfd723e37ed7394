"""Uploads and downloads of tensor bytes (part of ``Session``): a tiny upload is one entry of
the open batch; every other transfer is the session's transport's (Note [Python transports] in
``_transport.py``)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _wire
from ._transport import BIG_CHUNK, PutHeader


class Transfers:
    """Put/Get of a ``Session`` (called by tensors; the lock is taken here)."""

    def put(self, data: Union[np.ndarray, bytes], dtype_proto: int, shape: Sequence[int],
            device: str, requires_grad: bool, site: str,
            wrapped: bool = False) -> Tuple[int, int]:
        """Uploads ``data`` (already in wire layout: an array, or bytes) into a new handle;
        returns (handle, seq of its last command). ``wrapped``: a 0-dim Python number (one
        small chunk; Put.wrapped_number)."""
        if isinstance(data, bytes):
            flat = None
            raw = memoryview(data)
        else:
            flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            raw = memoryview(flat)
        total = raw.nbytes
        if total > self.chunk_bytes or total >= BIG_CHUNK:
            return self._transport.upload(raw, flat, PutHeader(dtype_proto, shape, device,
                                                               requires_grad, site))
        with self._lock:  # one small chunk in the open batch
            handle = self._new_handle_locked()
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

    def get(self, handle: int, site: str, nbytes: Optional[int] = None,
            out: Optional[np.ndarray] = None, maybe_big: bool = False) -> Tuple[Any, Any]:
        """Downloads a handle's values: (TensorMeta, little-endian bytes). Raises its error.
        ``nbytes`` (when the caller knows the size) lets big tensors take the transport's
        fast paths. ``out`` (a C-contiguous uint8 array of ``nbytes``, which must then be
        given) receives the bytes and is returned in their place; in a shared buffer, that is
        the one copy. ``maybe_big``: a size not known yet may be large (``numpy()``, not
        ``item()``), so it is asked for on a path that suits big ones."""
        return self._transport.download(handle, site, nbytes, out, maybe_big)

    def empty_download_cache(self) -> None:
        """Frees the buffers kept for big downloads (Note [Download cache]); arrays returned
        earlier stay valid."""
        if self._transport.cache is not None:
            self._transport.cache.clear()

    def peek_nbytes(self, handle: int) -> Optional[int]:
        """The byte size of ``handle`` if its Ack already arrived (no waiting)."""
        return self._handles.nbytes(handle)
