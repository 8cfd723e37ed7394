"""``torch.tensord.memory_allocated()`` / ``max_memory_allocated()`` / ``memory_reserved()`` /
``memory_stats()`` / ``reset_peak_memory_stats()``: the device session's own memory on the
daemon device behind ``tensord:0``.

They come from the session protocol's ``GetMemoryStats`` (``Session.memory_stats``), which any
tenant may send: no admin token. The daemon answers once every op queued before it ran (one
round trip, no separate synchronize), with this session's figures only: a daemon serves many
sessions, and none may learn anything of the others (docs/protocol.md "Memory statistics").
The daemon-wide allocator figures (reserved and cached bytes, segments, other sessions) are the
operator's (``tensorctl memory``).

- ``memory_stats()``: ``torch.cuda.memory_stats()``'s keys that one session's tensors make:
  ``allocated_bytes.*``, ``allocation.*`` and ``requested_bytes.*`` for the ``all``,
  ``small_pool`` and ``large_pool`` pools (``current``, ``peak``, ``allocated``, ``freed``),
  ``num_ooms``, and ``num_quota_rejections``.
- ``memory_allocated()`` / ``max_memory_allocated()``: bytes held by this session's tensors on
  the device, now and at most since the session opened or the last ``reset_peak_memory_stats``.
- ``memory_reserved()`` / ``max_memory_reserved()``: the daemon's cache is shared by every
  session, so what it holds is no one session's to report: the bytes held on this session's
  behalf, its allocated bytes (PyTorch's reserved >= allocated holds, with no cache slack).
"""

from __future__ import annotations

import collections
from typing import Any, Dict, Optional

from . import _connection


def _read(device: Any, reset_peak: bool = False) -> Dict[str, int]:
    """This session's stats on the daemon device behind ``device``."""
    _check_index(device)
    s = _connection.session()
    return s.memory_stats(_connection.daemon_device(), reset_peak=reset_peak)


def _check_index(device: Any) -> None:
    index = getattr(device, "index", device)
    if isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else None
    if index not in (None, 0):
        raise RuntimeError(f"{device}: the tensord device has one index, tensord:0 "
                           "(Note [tensord:N])")


def memory_stats(device: Optional[Any] = None) -> "collections.OrderedDict[str, int]":
    """This session's allocator statistics on the device, under ``torch.cuda.memory_stats()``'s
    keys."""
    return collections.OrderedDict(sorted(_read(device).items()))


def memory_allocated(device: Optional[Any] = None) -> int:
    """Bytes held by this session's tensors on the device."""
    return _read(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: Optional[Any] = None) -> int:
    """The most bytes this session's tensors held at once on the device."""
    return _read(device)["allocated_bytes.all.peak"]


def memory_reserved(device: Optional[Any] = None) -> int:
    """Bytes held on this session's behalf on the device: its allocated bytes (the daemon's
    cache is shared, so its reserved bytes are no one session's)."""
    return memory_allocated(device)


def max_memory_reserved(device: Optional[Any] = None) -> int:
    """``max_memory_allocated`` (see ``memory_reserved``)."""
    return max_memory_allocated(device)


def reset_peak_memory_stats(device: Optional[Any] = None) -> None:
    """Restarts this session's peaks on the device from their current values."""
    _read(device, reset_peak=True)
