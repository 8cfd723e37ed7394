"""Shared buffers: host memory shared with the daemon, the analogue of CUDA pinned memory
(docs/protocol.md "Shared buffers"; the C++ client's ``client/shared_buffer.h``).

``empty_shared(shape, dtype)`` (or ``SharedBuffer(nbytes).numpy(shape, dtype)``) gives a NumPy
array whose memory the daemon maps too. Uploading such an array (``tensord.tensor(a)``,
``from_numpy``, ``as_tensor``) and downloading into one (``t.numpy(out=a)``) are then one
``Put``/``Get`` naming the buffer: the daemon's copy between the buffer and tensor storage is
the only one, with no staging copy or chunks. Transfers under 256 KiB and any other
memory take the ordinary path.

Lifetime rule: an upload from a shared array returns only once the daemon has acknowledged the
``Put`` (copied the bytes out), so the array may be rewritten as soon as the call returns;
``numpy(out=)`` returns once the bytes are in it. Do not write the array from another thread
while an upload from it runs, nor touch it while a download into it runs.

Fallback: when the session shares no memory with the daemon (another host, ``TENSORD_SHM=0``,
``shm=False``, daemon ``--shm_bytes=0``), ``SharedBuffer`` is plain memory (``is_shared``
False) and everything works on the ordinary path. The daemon's refusals (over the quota:
``OutOfMemoryError``; shared buffers turned off) raise.

A buffer is freed (on the daemon, and its bytes back in the quota) by ``free()``, or when the
``SharedBuffer`` and every array made from it are gone; the daemon frees all of a session's
buffers when it ends. Arrays made before ``free()`` stay valid memory, no longer shared.
"""

from __future__ import annotations

import mmap
import threading
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _context, _dtype, _errors, _shm
from ._errors import ProtocolError


class _Window:
    """An array's view of a buffer: its ``__array_interface__`` points into the mapping, and it
    keeps the buffer (so the mapping) alive as long as the array (its ``.base``) lives."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, owner: "SharedBuffer", offset: int, shape: Tuple[int, ...],
                 dtype: np.dtype) -> None:
        self._owner = owner
        self.__array_interface__ = {"data": (owner._address + offset, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}


class SharedBuffer:
    """``nbytes`` bytes of host memory shared with the daemon of ``session`` (default: the
    default session), zero-filled. See the module docstring for the rules."""

    def __init__(self, nbytes: int, session: Any = None, locked: bool = False) -> None:
        if nbytes <= 0:
            raise ValueError(f"a shared buffer needs at least one byte, got {nbytes}")
        s = session if session is not None else _context.default_session()
        self.session = s
        self.nbytes = int(nbytes)
        #: the daemon's id for the buffer (a ``RegionSpan.region``); 0 for plain memory
        self.region = 0
        self._freed = False
        # ``locked``: the session's lock is held, this thread's transfer exclusive (``_staging``)
        got = s._allocate_shared_locked(self.nbytes) if locked else s._allocate_shared(self.nbytes)
        if got is None:  # no shared memory with this daemon: plain memory
            self._mm = mmap.mmap(-1, self.nbytes)
            offset = 0
        else:
            self.region, self._mm, offset = got
        self._view = np.frombuffer(self._mm, dtype=np.uint8)
        self._address = self._view.ctypes.data + offset
        if self.region:
            s._register_shared(self.region, self._address, self.nbytes, offset)

    @property
    def is_shared(self) -> bool:
        """True when the daemon shares this memory (one-copy transfers)."""
        return self.region != 0 and not self._freed

    def numpy(self, shape: Union[int, Sequence[int]], dtype: Any = _dtype.float32,
              offset: int = 0) -> np.ndarray:
        """A C-contiguous array of ``shape`` and ``dtype`` (a tensord or NumPy dtype) over
        the buffer's bytes from ``offset``; it keeps the buffer alive."""
        if self._freed:
            raise ValueError("this shared buffer was freed")
        np_dtype = _numpy_dtype(dtype)
        shape_t = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
            int(d) for d in shape)
        n = np_dtype.itemsize
        for d in shape_t:
            n *= d
        if offset < 0 or offset % np_dtype.alignment or offset + n > self.nbytes:
            raise ValueError(f"an array of {n} bytes at offset {offset} does not fit a shared "
                             f"buffer of {self.nbytes} bytes (aligned to {np_dtype.alignment})")
        return np.asarray(_Window(self, offset, shape_t, np_dtype))

    def free(self) -> None:
        """Frees the daemon's side now (the bytes go back to the quota). Arrays already made
        stay valid, as plain memory: transfers from them take the ordinary path."""
        if self._freed:
            return
        self._freed = True
        if self.region:
            self.session._free_shared(self.region)

    def __del__(self) -> None:
        try:
            if not self._freed and self.region:
                self._freed = True
                self.session._free_shared(self.region, from_finalizer=True)
        except Exception:
            pass

    def __repr__(self) -> str:
        kind = "shared" if self.is_shared else "plain"
        return f"<tensord.SharedBuffer {self.nbytes} bytes, {kind}, region {self.region}>"


def empty_shared(*size: Any, dtype: Any = _dtype.float32, session: Any = None) -> np.ndarray:
    """A new zero-filled NumPy array in a shared buffer of its own: ``empty_shared(2, 3)`` or
    ``empty_shared((2, 3), dtype=tensord.int64)``. Plain memory where the session shares none
    with the daemon."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    np_dtype = _numpy_dtype(dtype)
    n = np_dtype.itemsize
    for d in shape:
        n *= int(d)
    return SharedBuffer(max(n, 1), session).numpy(shape, np_dtype)


def _numpy_dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, _dtype.dtype):
        if dtype is _dtype.bfloat16:
            raise TypeError("NumPy has no bfloat16 to make a shared array of (bfloat16 values "
                            "arrive as float32: use float32)")
        return np.dtype(dtype.numpy_dtype)
    return np.dtype(dtype)


class SharedBuffers:
    """The shared-buffer part of a ``Session``: allocation and the address ranges of live
    buffers (the one-``Put``/one-``Get`` transfers through them are ``LocalTransport``'s)."""

    _lock: threading.Lock

    def _allocate_shared(self, nbytes: int) -> Optional[Tuple[int, mmap.mmap, int]]:
        """Asks the daemon for a buffer and maps it: (region id, mapping, data offset), or None
        when this session shares no memory with the daemon. Raises the daemon's refusal."""
        if not self._transport.shares_memory:  # the daemon's memory is not reachable from here
            return None
        with self._lock:
            return self._allocate_shared_locked(nbytes)

    def _allocate_shared_locked(self, nbytes: int) -> Optional[Tuple[int, mmap.mmap, int]]:
        """``_allocate_shared`` with the lock held (released while waiting for the answer)."""
        if not self._transport.shares_memory:
            return None
        self._check_open_locked()
        self._wait_not_busy_locked()
        self._drain_released_locked()  # buffers freed before go first (the quota)
        rid, p = self._request_locked()
        cmd = self._add_locked()
        cmd.allocate_shared.request_id = rid
        cmd.allocate_shared.bytes = nbytes
        self._flush_locked()
        self._wait_locked(p, rid)
        if p.error is not None:
            raise _errors.fresh(p.error)
        reply = p.meta
        mm = _shm.map_region(reply.shm, populate=True)
        if mm is None or reply.shm.size - reply.shm.data_offset < nbytes:
            if mm is not None:
                mm.close()
            self._free_shared(reply.region, from_finalizer=True)  # no lock taken
            raise ProtocolError(f"the daemon made shared buffer {reply.region} of {nbytes} bytes "
                                f"but it cannot be mapped here as described ({reply.shm.path})",
                                op="allocate_shared")
        return reply.region, mm, reply.shm.data_offset

    def _register_shared(self, region: int, address: int, nbytes: int, offset: int) -> None:
        # copy-on-write tuple: lookups in other threads iterate a snapshot
        self._shared_ranges = self._shared_ranges + ((address, address + nbytes, region,
                                                      offset),)

    def _free_shared(self, region: int, from_finalizer: bool = False) -> None:
        """Forgets buffer ``region`` and releases it on the daemon: in a Release command now, or
        (from a finalizer, which must not block) with the next batch."""
        self._shared_ranges = tuple(r for r in self._shared_ranges if r[2] != region)
        if self._closing or self._broken is not None:
            return  # the daemon frees a closed session's buffers
        self._released_shared.append(region)
        if from_finalizer:
            self._wake_for_releases()
        else:
            with self._lock:
                if self._broken is None and not self._closing:
                    self._wait_not_busy_locked()
                    self._drain_released_locked()
                    self._after_add_locked()

    def _find_shared(self, address: int, nbytes: int) -> Optional[Tuple[int, int]]:
        """(region id, offset) of a shared buffer holding all of [address, address+nbytes)."""
        for begin, end, region, offset in self._shared_ranges:
            if begin <= address and address + nbytes <= end:
                return region, offset + address - begin
        return None
