"""The session's shared-memory region (docs/protocol.md "Shared memory"): its nonce page,
mailbox and, with a ring, command ring; no payload (bytes go through shared buffers: Note
[Staging buffer] in ``_staging.py``).

The daemon offers a region (``Welcome.shm``: a sealed memfd reachable as ``/proc/PID/fd/N``)
when the Hello asked for one. ``Region.open`` maps it and checks the nonce; any failure means
the daemon is elsewhere (or another user) and the stream is used instead.

``map_region`` is also how shared buffers (``_shared.py``) are mapped.

Note [Python mailbox]: the first Get of a download through the staging buffer asks the daemon
to announce its answer in the region's mailbox (docs/protocol.md "Mailbox", proto/mailbox.h) when
the C module ``_mailbox`` is built, the session wants it (``TransportOptions.mailbox_wanted``:
with the command ring, or on hosts of 4 or more CPUs) and no other Get of the session holds the
mailbox. The waiting thread then waits on the mailbox word without the GIL (``_mailbox.wait``:
a spin of ``connect(sync_spin_us=)``, 200 us by default, then a futex sleep) instead of for
the receiver thread, which saves gRPC's threads and two thread hand-offs on every ``item()``.
The stream still brings the answer: the receiver drops it when the waiter took it from the
mailbox, and wakes the word itself when the stream answered first (``wake_mailbox``), so either
side may win; every sleep is bounded besides, and the waiter re-checks the request after each.
"""

from __future__ import annotations

import mmap
import os
from typing import Any, Optional, Tuple

import numpy as np

from . import _options
from ._command_ring import CommandRing
from ._errors import ProtocolError
from ._options import TransportOptions
from ._proto import tensord_pb2 as pb

try:  # Note [Python mailbox]
    from . import _mailbox  # type: ignore[attr-defined]
except ImportError:
    _mailbox = None
if _options.pure_python():
    _mailbox = None  # no C module at all: the stream's answer

MIN_BYTES = 256 << 10  # smaller transfers go through the stream (no gain, one more copy)

# The mailbox's layout (proto/mailbox.h): the word, the announced request id and length, the
# serialized Data; a word with LOCAL set is the client's own wake-up.
_WORD, _REQUEST, _LENGTH, _PAYLOAD, _PAGE = 64, 72, 80, 128, 4096
_ID_MASK, _LOCAL = 0x7FFFFFFF, 0x80000000
_SLEEP_US = 20000  # the longest a waiter sleeps before it looks at its request again


class Region:
    """The client's mapping of a session's region."""

    def __init__(self, mm: mmap.mmap, desc: Any, options: TransportOptions) -> None:
        self.mm = mm
        self.view = np.frombuffer(mm, dtype=np.uint8)
        data_offset = desc.data_offset
        self.path = desc.path
        self.nonce = bytes(desc.nonce)
        base = self.view.ctypes.data
        # Note [Python command ring]
        self.ring: Optional[CommandRing] = (CommandRing.open(desc, base, data_offset)
                                            if options.ring else None)
        # Note [Python mailbox]: the word's address, 0 without the C module, the page or the wish
        wanted = options.mailbox_wanted(self.ring is not None)
        self.word = base + _WORD if (
            _mailbox is not None and wanted and data_offset >= _PAGE) else 0
        self.spin_us = options.sync_spin_us
        self.notify_rid = 0  # the Get announced in the mailbox, if any
        self.answers = 0  # answers taken from the mailbox so far

    def matches(self, desc: Any) -> bool:
        """True when ``desc`` (a resumed session's ``Welcome.shm``) is this same region."""
        return desc.path == self.path and desc.nonce == self.nonce and desc.size == len(self.mm)

    @classmethod
    def open(cls, desc: Any, options: TransportOptions) -> Optional["Region"]:
        """Maps ``Welcome.shm`` for a session with ``options``; None when it is not reachable
        from here."""
        mm = map_region(desc)
        if mm is None:
            return None
        return cls(mm, desc, options)


def map_region(desc: Any, populate: bool = False) -> Optional[mmap.mmap]:
    """Maps a region the daemon described (``ShmRegion``: a sealed memfd as ``/proc/PID/fd/N``)
    read-write and checks its nonce; None when it is not reachable from here (another host, pid
    namespace or user), malformed, or someone else's. ``populate``: every page mapped now
    (``MAP_POPULATE``), so copies through it take no page faults."""
    if (not desc.path or not desc.nonce or desc.data_offset > desc.size
            or desc.data_offset % 4096 or len(desc.nonce) > desc.data_offset):
        return None
    try:
        fd = os.open(desc.path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
    try:
        if os.fstat(fd).st_size < desc.size:
            return None
        mm = mmap.mmap(fd, desc.size, flags, mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if mm[:len(desc.nonce)] != desc.nonce:
        mm.close()
        return None
    return mm


def mailbox_free(r: Region) -> bool:
    """Whether a download may ask for the mailbox now (lock held): Note [Python mailbox]."""
    return r.word != 0 and r.notify_rid == 0


def ask_locked(s: Any, handle: int, site: str, region: int, offset: int, capacity: int,
               byte_offset: int = 0, notify: bool = False) -> Any:
    """Queues a Get answered in shared memory: ``capacity`` bytes of ``handle`` from
    ``byte_offset`` written at ``offset`` of shared buffer ``region``; returns its request id
    and pending answer. ``notify``: announced in the session region's mailbox too (Note
    [Python mailbox])."""
    rid, p = s._request_locked()
    cmd = s._add_locked()
    p.seq = cmd.seq
    g = cmd.get
    g.handle, g.request_id, g.site = handle, rid, site
    span = g.into.region
    span.region, span.offset, span.size = region, offset, capacity
    g.byte_offset = byte_offset
    g.notify = notify
    return rid, p


def await_notified(s: Any, r: Region, p: Any, rid: int, where: Tuple[int, int]) -> None:
    """Waits for the answer to ``rid`` in the mailbox, else the stream's (lock held, released
    while waiting); ``p`` is then answered as the receiver would have answered it, and
    ``_wait_locked`` does the bookkeeping of either (the stream's copy then finds no request)."""
    mine = rid & _ID_MASK
    try:
        while not p.done and s._broken is None:
            s._lock.release()
            try:
                word = _mailbox.wait(r.word, mine, r.spin_us, _SLEEP_US)
            finally:
                s._lock.acquire()
            if word == mine and not p.done:  # announced by the daemon
                if _read_announcement(r, rid, p, where):
                    r.answers += 1
                elif r.ring is not None:  # a ring's daemon sends no copy on the stream
                    p.error = ProtocolError(f"the mailbox's announcement of request {rid} "
                                            "could not be read", op="get")
                    p.finish()
                break  # else not readable as expected: the stream's answer
            if word == mine | _LOCAL:
                break  # the stream answered (or failed) first
    finally:
        r.notify_rid = 0
    s._wait_locked(p, rid)


def _read_announcement(r: Region, rid: int, p: Any, where: Tuple[int, int]) -> bool:
    """Fills ``p`` from the mailbox's announcement of ``rid``: a shared-memory Data at
    ``where`` (region, offset). False when it is not that (the waiter then takes the stream's)."""
    mm = r.mm
    announced = int.from_bytes(mm[_REQUEST:_REQUEST + 8], "little")
    length = int.from_bytes(mm[_LENGTH:_LENGTH + 4], "little")
    if announced != rid or length > _PAGE - _PAYLOAD:
        return False
    d = pb.Data.FromString(mm[_PAYLOAD:_PAYLOAD + length])
    span = d.payload.region
    if (d.request_id != rid or d.payload.WhichOneof("where") != "region"
            or (span.region, span.offset) != where):
        return False
    p.finish_in_place(d.meta if d.HasField("meta") else None, d.total_bytes, span.size)
    return True


def wake_mailbox(r: Region) -> None:
    """The receiver's wake-up (lock held) after the stream answered the mailbox's request, or
    when the stream is over: the waiter must not sleep past it. Never over an announcement."""
    rid = r.notify_rid
    if not rid or not r.word:
        return
    mine = rid & _ID_MASK
    if int.from_bytes(r.mm[_WORD:_WORD + 4], "little") == mine:
        return  # announced: the waiter reads the mailbox
    _mailbox.wake(r.word, mine | _LOCAL)
