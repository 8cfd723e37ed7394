"""The bulk socket (docs/protocol.md "Bulk socket"): without a shared-memory
region (another host, or ``shm=False``), uploads and downloads of ``MIN_BYTES`` or more move
their bytes on TCP connections beside the stream, when the daemon offers them
(``Welcome.bulk_port``): ``sendall`` or ``recv_into`` straight between the array and the
kernel, instead of 1-4 MiB gRPC messages that grpcio copies several times under the GIL.
When the session speaks TLS (``credentials=TlsCredentials(...)``, ``_tls.py``), so does every
lane, with the same roots and client certificate, the hello inside it; a session given opaque
``grpc`` credentials asks for no socket.

A session's socket has up to ``Welcome.bulk_lanes`` connections ("lanes", proto/bulk_socket.h),
all connected at the first big transfer (``connect(bulk_lanes=)`` caps how many; 1: lane 0
alone). A transfer of 8 MiB or more is striped over them (``lanes_for``, ``lane_span``): lane 0
moves its span on the calling thread, the others on threads of their own, all at once; the
socket calls release the GIL, so both ends' cores share the copies and the TCP work that one
loopback stream leaves to a single core.

The command still goes on the stream; its bytes follow on the lanes in command order. A bulk
transfer is exclusive (``_exclusive_locked``: no other thread's command gets between), and the
session lock is released only around the socket I/O itself (``BulkLanes.io``), so the receiver
thread goes on applying Acks meanwhile. The commands are ``RemoteTransport``'s
(``_put_bulk_locked``, ``_get_bulk_locked``); the connections are ``BulkLanes``'.
``TENSORD_BULK=0`` or ``connect(bulk=False)`` turns it off (``_options``)."""

from __future__ import annotations

import socket
import ssl
import threading
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

from . import _errors
from ._options import MAX_BULK_LANES, TransportOptions
from ._tls import TlsCredentials

MIN_BYTES = 1 << 20
# The hellos and the lanes' split, as proto/bulk_socket.h has them.
_MAGIC = b"TDBULK01"  # lane 0: the magic and the token
_LANE_MAGIC = b"TDBULK02"  # lane i > 0: the lane magic, the token and the byte i
_TOKEN_BYTES = 32
_ACCEPTED = b"Y"
MAX_LANES = MAX_BULK_LANES  # kBulkMaxLanes
LANE_ALIGN = 64 << 10  # kBulkLaneAlign: lanes' spans start at multiples of this
MIN_LANE_BYTES = 4 << 20  # kBulkMinLaneBytes

# A lane's I/O: moves bytes [begin, end) of the transfer on ``sock``.
Move = Callable[[socket.socket, int, int], None]


def lanes_for(n: int, available: int) -> int:
    """How many of ``available`` lanes an ``n``-byte transfer is striped over: each carries
    ``MIN_LANE_BYTES`` or more (mirrors ``BulkLanesFor`` in proto/bulk_socket.h)."""
    return min(max(1, n // MIN_LANE_BYTES), max(available, 1))


def lane_span(n: int, lanes: int, lane: int) -> Tuple[int, int]:
    """Bytes [begin, end) of an ``n``-byte transfer that lane ``lane`` of ``lanes`` carries:
    spans of ceil(n / lanes) rounded up to ``LANE_ALIGN``, in lane order, the last ones shorter
    or empty; ``lanes`` 0 is 1 (mirrors ``BulkLane`` in proto/bulk_socket.h)."""
    if lanes <= 1:
        return (0, n) if lane == 0 else (n, n)
    part = -(-n // lanes)
    part = -(-part // LANE_ALIGN) * LANE_ALIGN
    begin = min(n, part * lane)
    return begin, min(n, begin + part)


def tcp_host(address: str) -> Optional[str]:
    """The host of a gRPC target naming a TCP address (``host:port``, ``[v6]:port``,
    ``dns:///host:port``, ``ipv4:host:port``), else None."""
    for scheme in ("dns:///", "ipv4:", "ipv6:"):
        if address.startswith(scheme):
            address = address[len(scheme):]
    if address.startswith("unix:") or "/" in address or ":" not in address:
        return None
    host = address.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def wanted(address: str, options: TransportOptions, secure: bool = False,
           tls: Optional[TlsCredentials] = None) -> bool:
    """Whether a session to ``address`` with ``options`` asks for a bulk socket
    (``Hello.bulk``): allowed, the address is a TCP one, and a ``secure`` stream's lanes can be
    made secure too (``tls``)."""
    return options.bulk and tcp_host(address) is not None and (tls is not None or not secure)


def _hello(host: str, port: int, hello: bytes,
           tls: Optional[TlsCredentials] = None) -> Tuple[Optional[socket.socket], str]:
    """A connection the daemon accepted with ``hello`` (one lane; through TLS with ``tls``),
    else None and why. The connection, handshake and answer each wait 10 s at most."""
    try:
        sock = socket.create_connection((host, port), timeout=10.0)
    except OSError as e:
        return None, f"cannot connect: {e}"
    try:
        if tls is not None:
            sock = tls.wrap(sock, host)
        sock.sendall(hello)
        if sock.recv(1) != _ACCEPTED:
            sock.close()
            return None, "closed without an answer"
        sock.settimeout(None)  # a transfer may wait for queued work: no timeout
    except OSError as e:  # ssl.SSLError: the TLS handshake failed
        sock.close()
        return None, f"{'TLS: ' if isinstance(e, ssl.SSLError) else ''}{e}"
    return sock, ""


def _wake(socks: List[socket.socket]) -> None:
    """Ends every lane's I/O in progress (shutdown, not close: other threads may be in a call
    on them)."""
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _stripe(socks: List[socket.socket], n: int,
            move: Move) -> Optional[Tuple[int, BaseException]]:
    """Moves the ``n`` bytes over the lanes ``socks`` at once: lane 0 on this thread, the others
    (up to the last non-empty span) on threads of their own, or after lane 0 where a thread
    cannot start. The first lane to fail wakes the others; returns (lane, its error), or None."""
    lanes = len(socks)
    failed: List[Tuple[int, BaseException]] = []

    def run(lane: int) -> None:
        begin, end = lane_span(n, lanes, lane)
        try:
            move(socks[lane], begin, end)
        except BaseException as e:  # noqa: B902 (an interrupt stops the other lanes too)
            failed.append((lane, e))
            _wake(socks)

    helpers: List[threading.Thread] = []
    inline: List[int] = []
    for lane in range(1, lanes):
        if lane_span(n, lanes, lane)[0] >= n:
            break  # empty from here on
        t = threading.Thread(target=run, args=(lane,), name=f"tensord-bulk-lane-{lane}",
                             daemon=True)
        try:
            t.start()
        except RuntimeError:  # no thread to be had: after lane 0, in lane order
            inline.append(lane)
            continue
        helpers.append(t)
    run(0)
    for lane in inline:
        run(lane)
    for t in helpers:
        t.join()
    return failed[0] if failed else None


def send(raw: memoryview) -> Move:
    """A lane's I/O of an upload: its span of ``raw``, sent."""
    def send(sock: socket.socket, begin: int, end: int) -> None:
        sock.sendall(raw[begin:end])
    return send


def receive(dst: np.ndarray, n: int) -> Move:
    """A lane's I/O of a download: its span of the ``n`` bytes, received into ``dst``."""
    view = memoryview(dst).cast("B")

    def receive(sock: socket.socket, begin: int, end: int) -> None:
        got = begin
        while got < end:
            k = sock.recv_into(view[got:end])
            if k == 0:
                span = "" if (begin, end) == (0, n) else f" (bytes {begin} to {end} of {n})"
                raise OSError(f"closed after {got - begin} of {end - begin} bytes{span}")
            got += k
    return receive


class BulkLanes:
    """The lanes of one session's bulk socket: connected at the first big transfer, dropped
    for good after a failure (the session's transfers then take the stream). Thread-safe:
    ``usable`` connects under a lock of its own; ``io`` runs with the session's lock, which it
    releases around the socket calls (other threads' transfers wait for the session's
    exclusive transfer, not for it)."""

    def __init__(self, address: str, options: TransportOptions, secure: bool = False,
                 tls: Optional[TlsCredentials] = None) -> None:
        #: the daemon's host when the session asks for a socket (``Hello.bulk``), else None
        self.host = tcp_host(address) if wanted(address, options, secure, tls) else None
        self.tls = tls  # the lanes' TLS, or None: plain TCP
        #: why lane 0 did not connect ("": it did, or not tried), e.g. "TLS: [SSL:
        #: CERTIFICATE_VERIFY_FAILED] ...": the session's transfers then take the stream
        self.refused = ""
        self.cap = options.bulk_lanes  # the most lanes to connect
        #: None until the first big transfer tries; then whether the lanes work
        self.state: Optional[bool] = None
        self.socks: List[socket.socket] = []  # lanes 0..L-1
        self._lock = threading.Lock()

    @property
    def wanted(self) -> bool:
        """Whether the session asks for a bulk socket (``Hello.bulk``)."""
        return self.host is not None

    @property
    def connected(self) -> int:
        """How many lanes are connected (0: none, or dropped)."""
        return len(self.socks)

    def usable(self, welcome: Any) -> bool:
        """Whether transfers may use it; connects the first time (once: a refusal or a failed
        transfer leaves them on the stream for the session's life)."""
        if self.state is None:
            with self._lock:
                if self.state is None:
                    self.socks = self.connect(welcome)
                    self.state = bool(self.socks)
        return bool(self.state)

    def connect(self, welcome: Any) -> List[socket.socket]:
        """Lane 0, then lanes 1.. up to the first the daemon refuses (the lanes used are always
        0..L-1), at most ``Welcome.bulk_lanes`` and ``cap``; [] if lane 0 fails."""
        w = welcome
        if self.host is None or not w.bulk_port or len(w.bulk_token) != _TOKEN_BYTES:
            return []
        token = w.bulk_token.encode()
        first, self.refused = _hello(self.host, w.bulk_port, _MAGIC + token, self.tls)
        if first is None:
            return []
        socks = [first]
        for lane in range(1, min(max(w.bulk_lanes, 1), self.cap, MAX_LANES)):
            sock, _ = _hello(self.host, w.bulk_port, _LANE_MAGIC + token + bytes([lane]),
                             self.tls)
            if sock is None:
                break
            socks.append(sock)
        return socks

    def drop(self) -> None:
        """After a failed transfer (or at close): the lanes are closed and not used again."""
        self.state = False
        socks, self.socks = self.socks, []
        _wake(socks)  # a lane's thread still in a call returns at once
        for sock in socks:
            sock.close()

    def close(self) -> None:
        """At the session's end."""
        with self._lock:
            self.drop()

    def io(self, what: str, n: int, lanes: int, move: Move, lock: Any) -> None:
        """Runs ``move`` (the socket I/O) for the spans of lanes 0..``lanes``-1 of the ``n``
        bytes, at once, with ``lock`` (the session's, held) released meanwhile. A failing lane
        drops them all."""
        socks = self.socks[:lanes]
        lock.release()
        try:
            failed = (_stripe(socks, n, move) if len(socks) == lanes  # else: closed meanwhile
                      else (len(socks), OSError("not connected")))
            if failed is not None:
                lane, e = failed
                if not isinstance(e, OSError):
                    raise e  # an interrupt
                which = "the bulk socket" if lanes <= 1 else f"lane {lane} of the bulk socket"
                raise _errors.ConnectionLost(f"{what}: {which} to tensord broke ({e})",
                                             code=_errors.UNAVAILABLE,
                                             op=what.split()[0]) from None
        except BaseException:
            self.drop()  # part of the bytes moved: the lanes no longer match commands
            raise
        finally:
            lock.acquire()
