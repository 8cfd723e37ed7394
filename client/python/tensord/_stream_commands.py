"""Session commands for streams, events and TF32 (docs/protocol.md "Streams and events").

A mixin of ``Session``: these methods use its lock and open batch. The public API built on them
(``tensord.Stream``, ``tensord.Event``, ``tensord.stream``, ``tensord.backends``) is in
``_streams.py`` and ``backends.py``.
"""

from __future__ import annotations

from typing import Any


class StreamCommands:
    """Streams and events of a session; state lives in ``Session.__init__``."""

    _lock: Any
    _stream_id: int
    _next_stream_id: int
    _next_event_id: int
    _allow_tf32: bool

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matmuls and convolutions may use TF32 on CUDA (as last set)."""
        return self._allow_tf32

    @property
    def current_stream_id(self) -> int:
        """The id of the stream ops go onto now (0: the session's default stream)."""
        return self._stream_id

    def new_stream_id(self) -> int:
        """A fresh client-chosen stream id (the daemon creates the stream on first use)."""
        with self._lock:
            sid = self._next_stream_id
            self._next_stream_id += 1
        return sid

    def new_event_id(self) -> int:
        """A fresh client-chosen event id."""
        with self._lock:
            eid = self._next_event_id
            self._next_event_id += 1
        return eid

    def record_event(self, event: int, stream: int, device: str = "") -> None:
        """Queues RecordEvent: ``event`` marks the end of stream ``stream``'s queue on
        ``device`` (empty: the session's default device)."""
        with self._lock:
            self._check_open_locked()
            c = self._add_locked().record_event
            c.event, c.stream, c.device = event, stream, device
            self._after_add_locked()

    def wait_event(self, event: int, stream: int, device: str = "") -> None:
        """Queues WaitEvent: later work on stream ``stream`` waits for ``event``'s last record.
        An event never recorded is an error raised at the next ``synchronize``."""
        with self._lock:
            self._check_open_locked()
            c = self._add_locked().wait_event
            c.event, c.stream, c.device = event, stream, device
            self._after_add_locked()
