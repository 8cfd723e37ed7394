"""Session commands about the session's own use of the daemon: its memory statistics and the
ops its client ran itself (docs/protocol.md "Memory statistics" and "Profiling").

A mixin of ``Session``: these methods use its lock and open batch.

Both need a daemon that says it reads them (``Welcome.memory_stats``, ``Welcome.note_fallbacks``;
an older one would take them for commands with no kind).

- ``memory_stats(device)``: ``GetMemoryStats``, answered by the daemon once every command sent
  before it ran: the session's own allocations on a daemon device under
  ``torch.cuda.memory_stats()``'s keys (Note [Session stats] in the daemon's
  runtime/memory/allocator_stats.h). It needs no admin rights and tells nothing about other
  sessions; the daemon-wide figures are the Admin service's (``tensorctl memory``).
- ``note_fallback(op)``: Note [Client fallbacks]: reports that the client ran ``op`` itself
  (the PyTorch device's CPU fallback), so that the session's profiler and ``tensorctl`` show
  it. It travels with the next batch: no flush, no wait; consecutive reports share one
  ``NoteFallbacks`` command.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _errors

MAX_OP_NAME_BYTES = 128  # the daemon's kMaxNameBytes (server/wire_limits.h)
MAX_FALLBACKS_PER_COMMAND = 64  # its kMaxFallbacksPerCommand


def _op_name(op: str) -> str:
    """``op`` cut to the daemon's bound on a name, at a character boundary."""
    name = str(op)
    if not name:
        raise ValueError("note_fallback: the op name is empty")
    while len(name.encode("utf-8")) > MAX_OP_NAME_BYTES:
        name = name[:-1]
    return name


class UsageCommands:
    """Memory statistics and fallback reports of a ``Session``."""

    _lock: Any
    _open: Any
    _busy: Any
    welcome: Any

    def memory_stats(self, device: Optional[str] = None, *,
                     reset_peak: bool = False) -> Dict[str, int]:
        """This session's own memory on the daemon device ``device`` (default: the session's
        default device), after every command sent so far, under ``torch.cuda.memory_stats()``'s
        keys: ``allocated_bytes.{all,small_pool,large_pool}.{current,peak,allocated,freed}``,
        the same for ``allocation`` and ``requested_bytes``, ``num_ooms``,
        ``num_quota_rejections``; on ``cpu`` also ``shared_buffers`` and
        ``shared_buffer_bytes``. ``reset_peak``: the peaks restart from the current values
        after this read (``torch.cuda.reset_peak_memory_stats``). One round trip."""
        if not self.welcome.memory_stats:
            raise NotImplementedError(
                f"the tensord daemon at {self.address} ({self.server_version}) does not answer "
                "GetMemoryStats: it is older than this client; upgrade it (or ask its operator "
                "for `tensorctl memory`)")
        with self._lock:
            if self._busy is None:  # tensors dropped before the call are released before it
                self._drain_released_locked()
            rid, p = self._request_locked()
            cmd = self._add_locked()
            p.seq = cmd.seq
            get = cmd.get_memory_stats
            get.request_id = rid
            get.device = device or ""
            get.reset_peak = reset_peak
            self._flush_locked()
            self._wait_locked(p, rid)
        if p.error is not None:
            raise _errors.fresh(p.error)
        return dict(sorted(p.meta.stats.items()))

    def memory_allocated(self, device: Optional[str] = None) -> int:
        """Bytes held by this session's tensors on ``device`` (``torch.cuda.memory_allocated``)."""
        return self.memory_stats(device)["allocated_bytes.all.current"]

    def max_memory_allocated(self, device: Optional[str] = None) -> int:
        """The most bytes this session's tensors held at once on ``device`` since the session
        opened or ``reset_peak_memory_stats``."""
        return self.memory_stats(device)["allocated_bytes.all.peak"]

    def reset_peak_memory_stats(self, device: Optional[str] = None) -> None:
        """Restarts this session's peaks on ``device`` from their current values."""
        self.memory_stats(device, reset_peak=True)

    def note_fallback(self, op: str, count: int = 1) -> None:
        """Reports that this client ran ``op`` itself ``count`` times instead of as a daemon op
        (Note [Client fallbacks]); names are cut to 128 bytes. Never waits; ignored once the
        session is over, or by a daemon that does not count them (older than the client)."""
        name = _op_name(op)
        if count <= 0 or not self.welcome.note_fallbacks:
            return
        with self._lock:
            if self._closing or self._broken is not None:
                return
            cmd = self._open  # the last command queued, when it is a message
            if (cmd is None or cmd.WhichOneof("kind") != "note_fallbacks"
                    or len(cmd.note_fallbacks.fallbacks) >= MAX_FALLBACKS_PER_COMMAND):
                cmd = self._add_locked()
                added = True
            else:
                added = False
            f = cmd.note_fallbacks.fallbacks.add()
            f.op = name
            f.count = count
            if added:
                self._after_add_locked()
