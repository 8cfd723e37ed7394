"""Note [Download cache]: big ``numpy()`` downloads land in shared buffers the client keeps.

A same-host download through the staging buffer (Note [Staging buffer]) costs two copies per
byte (the daemon's into it, the client's out of it) and, for a new array of hundreds of MiB, a page fault for every
page of it: 0.05-0.5x of a memcpy in BENCHMARKS.md. A download into a shared buffer is one copy,
the daemon's, into memory already mapped on both sides. So ``numpy()`` without ``out=`` of at
least ``MIN_BYTES`` on a session that shares memory with its daemon takes a shared buffer from
this cache, has the daemon write the tensor there (one ``Get`` naming the buffer), and returns
an array over it. The array owns a *lease* on the buffer: when the last array over it is gone,
the buffer goes back to the cache instead of being freed, so a loop that downloads tensors of
the same size reuses the same memory with no new mapping, no page fault and one copy. This is
PyTorch's caching host allocator for pinned memory, applied to NumPy results.

A session without a region that moves big downloads on the bulk socket (``_bulk.py``) keeps
plain host buffers the same way (``LocalDownloadCache``): the lanes ``recv`` into memory that is
already faulted in, instead of zeroing hundreds of MiB of fresh pages per download (BENCHMARKS.md
"Session 13": 3.0-4.1 GB/s into new arrays, 4.9-5.2 into reused ones). Those buffers are the
client's own memory, which no daemon quota counts: the cache is on for every such session.

Rules:
- A buffer is handed out only while no array over it lives, so the daemon never writes memory
  that a live array shows (it writes a buffer only for a ``Get`` naming it).
- Buffers are sized in classes (quarters of a power of two, at least 2 MiB), so that tensors of
  nearby sizes share them; a request takes the smallest idle buffer of its class or above it
  up to the next class.
- Idle buffers are memory the user's quota counts, and a tensor allocation cannot reclaim
  them: so for a user with a quota (``Welcome.quota_bytes``) the cache is off unless the
  program sizes it itself (``connect(download_cache_bytes=...)``). Otherwise at most
  ``max_idle_bytes`` are kept (``connect(download_cache_bytes=)``, 1 GiB by default; 0 turns
  the cache off), the oldest freed first. When the daemon refuses a new buffer (over quota or its
  caps), the idle ones are freed and it is asked again; a second refusal makes that download
  take the staging buffer. ``Session.empty_download_cache()`` frees them on demand.
- The daemon allows a session 64 shared buffers (and `--shared_buffer_bytes` of them); the
  cache owns at most ``MAX_BUFFERS`` (idle or shown by arrays), so that the program's own
  ``empty_shared`` keeps room: past that, downloads take the staging buffer.
- Leases end in finalizers (any thread, any time): they only append to a deque; the cache
  takes returned buffers back, and trims, on the next ``take``.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, List, Optional

import numpy as np

from . import _errors

MIN_BYTES = 1 << 20
MAX_BUFFERS = 32
_MIN_CLASS = 2 << 20


def size_class(nbytes: int) -> int:
    """The buffer size for a download of ``nbytes``: the next quarter of a power of two."""
    if nbytes <= _MIN_CLASS:
        return _MIN_CLASS
    step = 1 << max(0, (nbytes - 1).bit_length() - 3)  # a quarter of the lower power of two
    return (nbytes + step - 1) // step * step


class _Lease:
    """The base of an array over a cached buffer: gives the buffer back when it dies."""

    __slots__ = ("__array_interface__", "_buffer", "_returned")

    def __init__(self, buffer: Any, nbytes: int,
                 returned: "collections.deque[Any]") -> None:
        self._buffer = buffer
        self._returned = returned
        self.__array_interface__ = {"data": (buffer._address, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}

    def __del__(self) -> None:
        self._returned.append(self._buffer)  # atomic: no lock in a finalizer


class DownloadCache:
    """Shared buffers for the big downloads of one session. Thread-safe."""

    shared = True  # its buffers are shared with the daemon (a Get names them)

    def __init__(self, session: Any, max_idle_bytes: int) -> None:
        self._session = session
        self._max_idle = max_idle_bytes
        self._lock = threading.Lock()
        self._idle: List[Any] = []  # SharedBuffers no array shows, oldest first
        self._idle_bytes = 0
        self._returned: "collections.deque[Any]" = collections.deque()
        self._owned = 0  # buffers made and not freed: idle or shown by arrays

    def take(self, nbytes: int) -> Optional[Any]:
        """A shared buffer of at least ``nbytes`` that no array shows, or None (no shared
        memory, or the daemon refused one even with the cache emptied). No session lock held."""
        want = size_class(nbytes)
        with self._lock:
            self._absorb_returned_locked()
            best = None
            for i, b in enumerate(self._idle):
                if nbytes <= b.nbytes <= size_class(want + 1) and (
                        best is None or b.nbytes < self._idle[best].nbytes):
                    best = i
            if best is not None:
                b = self._idle.pop(best)
                self._idle_bytes -= b.nbytes
                return b
            if self._owned >= MAX_BUFFERS:
                return None
            self._owned += 1  # claimed before the round trip (other threads)
        for attempt in range(2):
            try:
                b = self._make(want)
            except _errors.OutOfMemoryError:
                if attempt == 0:
                    self.clear()
                    continue
                b = None
            if b is not None and b.is_shared:
                return b
            with self._lock:
                self._owned -= 1
            return None
        return None

    def _make(self, nbytes: int) -> Any:
        """A new buffer of ``nbytes`` (raises OutOfMemoryError when refused)."""
        from ._shared import SharedBuffer  # _shared imports the session's modules
        return SharedBuffer(nbytes, self._session)

    def _drop(self, buffer: Any) -> None:
        """Frees a buffer trimmed from the idle ones (any thread, no lock taken)."""
        buffer._freed = True  # released with the next batch
        self._session._free_shared(buffer.region, from_finalizer=True)

    def lease(self, buffer: Any, nbytes: int) -> np.ndarray:
        """A uint8 array of the first ``nbytes`` of ``buffer``; the buffer comes back to the
        cache when the array (and every view of it) is gone."""
        return np.asarray(_Lease(buffer, nbytes, self._returned))

    def give_back(self, buffer: Any) -> None:
        """Returns a buffer that no array shows (a download into it failed)."""
        self._returned.append(buffer)

    def clear(self) -> None:
        """Frees every idle buffer now (their bytes go back to the quota)."""
        with self._lock:
            self._absorb_returned_locked()
            idle, self._idle, self._idle_bytes = self._idle, [], 0
            self._owned -= len(idle)
        for b in idle:
            b.free()

    def idle_bytes(self) -> int:
        with self._lock:
            self._absorb_returned_locked()
            return self._idle_bytes

    def _absorb_returned_locked(self) -> None:
        while self._returned:
            b = self._returned.popleft()
            if b.is_shared:
                self._idle.append(b)
                self._idle_bytes += b.nbytes
            else:  # freed meanwhile (the session ended)
                self._owned -= 1
        while self._idle_bytes > self._max_idle and self._idle:
            old = self._idle.pop(0)
            self._idle_bytes -= old.nbytes
            self._owned -= 1
            self._drop(old)


class _LocalBuffer:
    """Host memory of the client's own for a bulk download (the shape of a SharedBuffer the
    cache needs: ``nbytes``, ``_address``, ``is_shared``, ``free``)."""

    __slots__ = ("nbytes", "_array", "_address", "is_shared")

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes
        self._array = np.empty(nbytes, dtype=np.uint8)
        self._address = self._array.ctypes.data
        self.is_shared = True  # usable; False once freed

    def free(self) -> None:
        self.is_shared = False
        self._array = None


class LocalDownloadCache(DownloadCache):
    """Plain host buffers for one session's bulk downloads (no region). Thread-safe."""

    shared = False

    def _make(self, nbytes: int) -> Any:
        return _LocalBuffer(nbytes)

    def _drop(self, buffer: Any) -> None:
        buffer.free()

    def view(self, buffer: Any, nbytes: int) -> np.ndarray:
        """A uint8 array over the first ``nbytes`` of a taken buffer, to receive into (no
        lease: the caller leases or gives the buffer back once the bytes are in)."""
        return buffer._array[:nbytes]
