"""What a resume resends: the frames a session sent whose Ack has not arrived (the C++ client's
``ReplayLog``; docs/protocol.md "Resume").

Each flushed frame is kept with the seq of its last command (a packed run's commands have a seq
each, so a frame ending in a run ends at the run's last) until an Ack covers it. After a resume
the daemon says up to which seq it applied commands; the frames past it are sent again, whole
(a run straddling that seq goes again, and the daemon skips the entries it applied).

Not thread-safe: the session calls it under its lock.
"""

from __future__ import annotations

import collections
from typing import List, Tuple


class ReplayLog:
    """Sent, unacknowledged frames, oldest first."""

    def __init__(self) -> None:
        self._frames: "collections.deque[Tuple[int, bytes]]" = collections.deque()

    def __len__(self) -> int:
        return len(self._frames)

    def sent(self, last_seq: int, frame: bytes) -> None:
        """``frame``, whose last command is ``last_seq``, went out (or waits for a resume)."""
        self._frames.append((last_seq, frame))

    def acked(self, last_seq: int) -> None:
        """An Ack covered every command up to ``last_seq``."""
        frames = self._frames
        while frames and frames[0][0] <= last_seq:
            frames.popleft()

    def last_seq(self) -> int:
        """The last command seq of the newest frame kept (0: none)."""
        return self._frames[-1][0] if self._frames else 0

    def resend_after(self, applied: int) -> List[bytes]:
        """The frames whose last command the daemon has not applied (it applied up to
        ``applied``), in order."""
        return [frame for last_seq, frame in self._frames if last_seq > applied]
