"""Streams and events, named as ``torch.cuda``'s: ``Stream``, ``Event``, ``stream``,
``current_stream``, ``default_stream``, ``set_stream``.

A session has a default stream (id 0) and any number of extra ones (ids chosen here, created
by the daemon on first use on each device). The current stream is the session's: every op
sent after ``set_stream`` / inside ``with tensord.stream(s):`` goes onto stream ``s`` of its
device. Events order work across streams without waiting in Python: ``e.record()`` marks the
end of a stream's queue and ``s.wait_event(e)`` makes later work on ``s`` wait for it on the
device. On the CPU, ops run in command order whatever the stream, so streams and events order
nothing there, but they are checked the same way (waiting on an event never recorded raises
``InvalidArgumentError`` at the next ``synchronize``) and programs run unchanged on CUDA.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

import contextlib

from . import _context
from ._dtype import device_str
from ._session import Session

__all__ = ["Stream", "Event", "stream", "current_stream", "default_stream", "set_stream"]


def _session(session: Optional[Session]) -> Session:
    return session if session is not None else _context.default_session()


class Stream:
    """A stream of the session (``torch.cuda.Stream``): ``Stream()`` makes a new one.

    ``device`` names the device whose stream ``record_event``/``wait_event`` use (default: the
    session's default device when the command runs); ops use the stream on their own device.
    ``priority`` is accepted for PyTorch compatibility and ignored.
    """

    def __init__(self, device: Any = None, priority: int = 0, *,
                 session: Optional[Session] = None, _id: Optional[int] = None) -> None:
        self.session = _session(session)
        self.device = device_str(device)
        self.stream_id: int = self.session.new_stream_id() if _id is None else _id
        self._waits: Optional[Event] = None

    def wait_event(self, event: "Event") -> None:
        """Later work on this stream waits (on the device) for ``event``'s last record."""
        self.session.wait_event(event.event_id, self.stream_id, self.device)

    def wait_stream(self, stream: "Stream") -> None:
        """Later work on this stream waits for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event(self._sync_event()))

    def _sync_event(self) -> "Event":
        # one event per waiting stream, recorded again per wait_stream: a wait captures the
        # record it follows, so reusing the id is safe and a loop makes no new events
        if self._waits is None:
            self._waits = Event(session=self.session)
        return self._waits

    def record_event(self, event: Optional["Event"] = None) -> "Event":
        """Records ``event`` (a new one if None) on this stream and returns it."""
        event = event if event is not None else Event(session=self.session)
        event.record(self)
        return event

    def synchronize(self) -> None:
        """Waits until the daemon ran every command so far (all streams: stronger than
        PyTorch's, never weaker) and raises the first error since the last synchronize."""
        self.session.synchronize()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Stream) and other.session is self.session
                and other.stream_id == self.stream_id and other.device == self.device)

    def __hash__(self) -> int:
        return hash((id(self.session), self.stream_id, self.device))

    def __repr__(self) -> str:
        where = f" device={self.device}" if self.device else ""
        return f"<tensord.Stream id={self.stream_id}{where}>"


class Event:
    """An event of the session (``torch.cuda.Event``), named by a client-chosen id.

    Events only order work; ``enable_timing``, ``blocking`` and ``interprocess`` are not
    supported (``enable_timing=True`` raises ``ValueError``).
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, *, session: Optional[Session] = None) -> None:
        if enable_timing or interprocess:
            raise ValueError("tensord events order work across streams; timing and "
                             "interprocess events are not supported (use tensord.profiler "
                             "for timings)")
        self.session = _session(session)
        self.event_id: int = self.session.new_event_id()

    def record(self, stream: Optional[Stream] = None) -> None:
        """Marks the end of ``stream``'s queue (default: the current stream); recording again
        moves the event."""
        s = stream if stream is not None else current_stream(session=self.session)
        self.session.record_event(self.event_id, s.stream_id, s.device)

    def wait(self, stream: Optional[Stream] = None) -> None:
        """Makes ``stream`` (default: the current stream) wait for this event."""
        s = stream if stream is not None else current_stream(session=self.session)
        s.wait_event(self)

    def synchronize(self) -> None:
        """Waits until the daemon ran every command so far (see ``Stream.synchronize``)."""
        self.session.synchronize()

    def __del__(self) -> None:
        # Like a Tensor's handle: released in the next batch (Release.events), never blocking.
        s = getattr(self, "session", None)
        if s is not None and not s.closed:
            s._released_events.append(self.event_id)

    def __repr__(self) -> str:
        return f"<tensord.Event id={self.event_id}>"


def current_stream(device: Any = None, *, session: Optional[Session] = None) -> Stream:
    """The stream ops go onto now (the default stream unless ``set_stream``/``stream``)."""
    s = _session(session)
    return Stream(device, session=s, _id=s.current_stream_id)


def default_stream(device: Any = None, *, session: Optional[Session] = None) -> Stream:
    """The session's default stream (id 0)."""
    return Stream(device, session=_session(session), _id=0)


def set_stream(s: Stream) -> None:
    """Makes ``s`` the current stream of its session: later ops go onto it."""
    s.session.set_options(stream=s.stream_id)


@contextlib.contextmanager
def stream(s: Optional[Stream]) -> Iterator[Optional[Stream]]:
    """``with tensord.stream(s):`` runs the ops inside on ``s``, then restores the previous
    current stream (``None``: no change)."""
    if s is None:
        yield s
        return
    previous = s.session.current_stream_id
    s.session.set_options(stream=s.stream_id)
    try:
        yield s
    finally:
        s.session.set_options(stream=previous)
