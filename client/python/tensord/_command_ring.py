"""The session region's command ring (docs/protocol.md "Command ring", proto/command_ring.h).

Note [Python command ring]: on a same-host session whose daemon offers a ring
(``Welcome.shm.ring_bytes``, asked for by ``Hello.command_ring`` when the C module ``_ring`` is
built and the session's ``ring`` option is on, ``_options``), a flushed batch is written into the ring and the
daemon's reader thread is woken by a futex, instead of going through gRPC Python's send path
(its own thread, the GIL hand-offs, 60-150 us a frame on 2 vCPUs). Replies still come on the
stream, except the answers the mailbox brings (``_shm.py``), and the daemon holds back the Acks
of the batches its ring reader runs (value reads) for up to a millisecond, sending them as one:
a thread that waits for an Ack (a fresh tensor's shape, a staging buffer or window to reuse) asks for them
through the ring's ``ack_wanted`` word (``want_ack``; Note [Held acks] in
server/session_outbox.h).

One order of batches whichever way they go: a frame too big for the ring goes on the stream only
after the daemon read everything in the ring (``DRAINED``), and the next frame goes into the
ring only after the daemon queued that stream frame (``STREAM``: its ``stream_seq`` word). A
resumed stream resends the unacknowledged batches, which the daemon may also still find in the
ring: it skips commands it already applied, and new frames wait for the resent ones the same way.
Every wait is bounded and re-checks the stream, so a daemon that went away is noticed as it is
without the ring (the receiver marks the connection dead before it takes the session's lock).
"""

from __future__ import annotations

from typing import Any, Optional

from . import _options

try:  # Note [Python command ring]
    from . import _ring  # type: ignore[attr-defined]
except ImportError:
    _ring = None
if _options.pure_python():
    _ring = None

#: Whether this client can write a ring (its C module is built and allowed).
available = _ring is not None

_CONTROL_BYTES = 4096
_WAIT_US = 20000  # the longest one wait lasts before the caller looks at its session again


class CommandRing:
    """The client's side of one session region's ring."""

    def __init__(self, base: int, ring_offset: int, ring_bytes: int) -> None:
        self.control = base + ring_offset
        self.records = self.control + _CONTROL_BYTES
        self.size = ring_bytes
        self.max_frame = ring_bytes // 2 - 8  # _ring.put's bound
        self.stream_seq = 0  # the last seq sent on the stream that the ring must wait for
        self.frames = 0  # frames written so far
        self.stream_frames = 0  # frames too big for it, sent on the stream instead

    @classmethod
    def open(cls, desc: Any, base: int, data_offset: int) -> "Optional[CommandRing]":
        """The ring ``desc`` (a ``ShmRegion``) describes in the mapping at ``base``, or None
        (no C module, none offered, or a layout that does not fit before the payload area)."""
        if _ring is None or desc.ring_bytes == 0:
            return None
        size, offset = desc.ring_bytes, desc.ring_offset
        if (size & (size - 1) or size < 4096 or offset % 4096 or offset < 4096
                or offset + _CONTROL_BYTES + size > data_offset):
            return None
        return cls(base, offset, size)

    def send(self, s: Any, frame: bytes) -> bool:
        """Writes ``frame`` (the batch ending at ``s._sent_seq``) into the ring: True. False
        when it must go on the stream (too big); the ring is drained first and the stream
        frame's seq kept for the next ``send``. Called under the session's lock."""
        if len(frame) > self.max_frame:
            self._wait(s, _ring.DRAINED, 0)
            self.stream_seq = s._sent_seq
            self.stream_frames += 1
            return False
        if self.stream_seq:
            self._wait(s, _ring.STREAM, self.stream_seq)
            self.stream_seq = 0
        put = _ring.put
        while not put(self.control, self.records, self.size, frame, _WAIT_US):
            if s._conn.dead or s._broken is not None:
                return True  # never read: the session's unacknowledged batches keep it
        self.frames += 1
        return True

    def want_ack(self, seq: int) -> None:
        """The caller waits for the Ack of command ``seq``: the daemon sends the Acks it holds
        back for the ring's value reads now (Note [Held acks], server/session_outbox.h)."""
        _ring.want_ack(self.control, seq)

    def after_resend(self, last_seq: int) -> None:
        """A resumed stream resent batches up to ``last_seq``: new frames wait for them."""
        self.stream_seq = max(self.stream_seq, last_seq)

    def _wait(self, s: Any, kind: int, value: int) -> None:
        wait = _ring.wait
        while not wait(self.control, kind, value, _WAIT_US):
            if s._conn.dead or s._broken is not None:
                return
