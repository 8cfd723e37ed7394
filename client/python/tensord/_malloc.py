"""Keeping chunk-sized transfer buffers mapped (Note [Transfer buffers] in
runtime/core/transfer_buffers.h; the C++ client and the daemon do the same).

A stream transfer allocates and frees about a chunk's worth of buffers per chunk: grpcio's
read slices and message bytes, the frames this client joins. Under glibc's default, dynamic
thresholds they are unmapped or trimmed off the heap once freed, and every chunk page-faults
fresh, zeroed memory in again. Raising malloc's mmap and trim thresholds keeps them mapped.
"""

from __future__ import annotations

import ctypes
import os
import threading

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 8 << 20  # above any chunk-sized buffer
_TRIM_THRESHOLD = 32 << 20  # above what an upload or a download has in flight
_lock = threading.Lock()
_tried = False


def keep_transfer_buffers_mapped() -> bool:
    """Sets glibc's mmap and trim thresholds for the whole process, once. Skipped (False) when
    the environment sets malloc tunables (the user's choice wins) or malloc is not glibc's."""
    global _tried
    with _lock:
        if _tried:
            return False
        _tried = True
    if any(os.environ.get(name) is not None
           for name in ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return (mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1
            and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1)
