#!/usr/bin/python3
"""A userspace TCP proxy that makes loopback look like a WAN link: per-direction fixed delay and
rate limit (this machine has no ``tc netem``), plus the faults the resume tests need (cut every
connection now or after N more bytes from the daemon, refuse new ones, stop forwarding for a
while). Used as a library by ``wan_bench.py`` and ``tests/python`` and from the command line:

    wan_proxy.py --target 127.0.0.1:50051 --listen 127.0.0.1:50052 --rtt_ms 50 --mbit 100

The link model: each direction is a serial line of ``rate`` bytes/s followed by ``delay``
seconds of propagation. A chunk read at time t leaves the line at
``free = max(t, free) + len / rate`` and is written to the far side at ``free + delay``; at most
``rate * delay + 4 MiB`` bytes (or 16 MiB without a rate) are held per direction, after which the
proxy stops reading, so the sender meets TCP back-pressure as on a real path. TCP itself runs
on loopback on both sides of the proxy; HTTP/2 flow control is end to end, so gRPC's windows
see the full round trip.
"""

from __future__ import annotations

import argparse
import collections
import socket
import threading
import time
from typing import Deque, List, Optional, Tuple

_MiB = 1 << 20


class Line:
    """One direction of a link: ``rate`` bytes/s (None: unlimited) then ``delay`` seconds,
    shared by every connection that crosses it (the stream and the bulk socket's lanes
    compete for the same bandwidth, as on a real path). Thread-safe."""

    def __init__(self, delay: float, rate: Optional[float]) -> None:
        self.delay = delay
        self.rate = rate
        self._lock = threading.Lock()
        self._free_at = 0.0
        self.carried = 0  # bytes that have crossed this line, every connection together

    def due(self, nbytes: int, now: float) -> float:
        """When ``nbytes`` read at ``now`` reach the far side."""
        with self._lock:
            self.carried += nbytes
            if not self.rate:
                return now + self.delay
            self._free_at = max(now, self._free_at) + nbytes / self.rate
            return self._free_at + self.delay


class _Pipe:
    """One direction of one connection: a reader thread timestamps chunks, a writer thread
    delivers each at its time."""

    def __init__(self, proxy: "WanProxy", src: socket.socket, dst: socket.socket,
                 downstream: bool) -> None:
        self._proxy = proxy
        self._src, self._dst = src, dst
        self._downstream = downstream
        self._line = proxy.down if downstream else proxy.up
        rate = self._line.rate
        self._limit = int(rate * self._line.delay) + 4 * _MiB if rate else 16 * _MiB
        # a chunk is about 1 ms of the line (4-64 KiB), so slow lines deliver smoothly
        self._read_size = max(4096, min(1 << 16, int(rate / 1000))) if rate else 1 << 16
        self._cv = threading.Condition()
        self._queue: Deque[Tuple[float, bytes]] = collections.deque()
        self._queued = 0
        self._eof = False
        self.threads = [threading.Thread(target=f, daemon=True, name=f"wan-proxy-{f.__name__}")
                        for f in (self._read, self._write)]
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        with self._cv:
            self._eof = True
            self._queue.clear()
            self._cv.notify_all()

    def _read(self) -> None:
        try:
            while True:
                data = self._src.recv(self._read_size)
                now = time.monotonic()
                with self._cv:
                    if not data or self._eof:
                        break
                    self._queue.append((self._line.due(len(data), now), data))
                    self._queued += len(data)
                    self._cv.notify_all()
                    self._cv.wait_for(lambda: self._queued < self._limit or self._eof)
        except OSError:
            pass
        with self._cv:
            self._eof = True  # the writer drains what is queued, then shuts the far side
            self._cv.notify_all()

    def _write(self) -> None:
        try:
            while True:
                with self._cv:
                    self._cv.wait_for(lambda: self._queue or self._eof)
                    if not self._queue:
                        break
                    due, data = self._queue[0]
                wait = max(due, self._proxy._resume_at) - time.monotonic()
                while wait > 0:  # a fixed delay, or a stall (WanProxy.stall): time is the point
                    time.sleep(wait)
                    wait = max(due, self._proxy._resume_at) - time.monotonic()
                cut = False
                if self._downstream:
                    data, cut = self._proxy._spend(data)
                self._dst.sendall(data)
                if cut:
                    self._proxy.cut()
                    break
                with self._cv:
                    if self._queue:
                        self._queue.popleft()
                        self._queued -= len(data)
                    self._cv.notify_all()
        except OSError:
            pass
        for s in (self._src, self._dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._cv:
            self._eof = True
            self._cv.notify_all()


class WanProxy:
    """Accepts on ``listen`` (default 127.0.0.1, a free port; ``address`` says which) and pipes
    every connection to ``target`` through two delayed, rate-limited lines.

    ``rtt``: seconds of round trip, split evenly between the directions unless ``up_delay`` /
    ``down_delay`` (client→daemon, daemon→client) say otherwise; ``rate``: bytes/s per
    direction (None: unlimited), or ``up_rate`` / ``down_rate``; ``lines``: (up, down)
    ``Line``s shared with another proxy instead (one link for several ports).

    Faults: ``cut()`` breaks every proxied connection, ``cut_after(n)`` does so once ``n`` more
    bytes went from daemon to client, ``refuse`` closes new connections at once (an unreachable
    daemon), ``stall(s)`` delivers nothing either way for ``s`` seconds (a Wi-Fi drop that TCP
    survives), ``drop(s)`` cuts and refuses for ``s`` seconds (one it does not survive)."""

    def __init__(self, target: str, rtt: float = 0.0, rate: Optional[float] = None, *,
                 up_delay: Optional[float] = None, down_delay: Optional[float] = None,
                 up_rate: Optional[float] = None, down_rate: Optional[float] = None,
                 lines: Optional[Tuple[Line, Line]] = None,
                 listen: str = "127.0.0.1:0") -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        if lines is None:
            lines = (Line(rtt / 2 if up_delay is None else up_delay,
                          up_rate if up_rate is not None else rate),
                     Line(rtt / 2 if down_delay is None else down_delay,
                          down_rate if down_rate is not None else rate))
        self.up, self.down = lines
        self._lock = threading.Lock()
        self._socks: List[socket.socket] = []
        self._pipes: List[_Pipe] = []
        self._budget: Optional[int] = None  # daemon→client bytes left before cutting
        self._resume_at = 0.0  # stall(): nothing is delivered before this monotonic time
        self._refuse_until = 0.0
        self.refuse = False
        self.cuts = 0
        self.connections = 0
        lhost, lport = listen.rsplit(":", 1)
        self._listener = socket.create_server((lhost, int(lport)))
        self.address = f"{lhost}:{self._listener.getsockname()[1]}"
        self._acceptor = threading.Thread(target=self._accept, daemon=True,
                                          name="wan-proxy-accept")
        self._acceptor.start()

    def __enter__(self) -> "WanProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cut(self) -> None:
        """Breaks every proxied connection now (both directions; queued bytes are lost)."""
        with self._lock:
            self._cut_locked()

    def cut_after(self, nbytes: int) -> None:
        """Breaks every connection once ``nbytes`` more bytes went from daemon to client."""
        with self._lock:
            self._budget = nbytes

    def stall(self, seconds: float) -> None:
        """Delivers nothing in either direction for ``seconds`` from now; connections stay up
        and what was sent meanwhile arrives afterwards (TCP's retransmissions, in effect)."""
        self._resume_at = time.monotonic() + seconds

    def drop(self, seconds: float) -> None:
        """Cuts every connection and refuses new ones for ``seconds`` from now."""
        with self._lock:
            self._refuse_until = time.monotonic() + seconds
            self._cut_locked()

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept(); close() alone does not
        except OSError:
            pass
        self._acceptor.join()
        self._listener.close()
        self.cut()
        with self._lock:
            pipes, self._pipes = self._pipes, []
        for p in pipes:
            for t in p.threads:
                t.join()

    def _cut_locked(self) -> None:
        socks, self._socks = self._socks, []
        self._budget = None
        self.cuts += 1
        for p in self._pipes:
            p.stop()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)  # the pipes see EOF/errors and close both ends
            except OSError:
                pass

    def _spend(self, data: bytes) -> Tuple[bytes, bool]:
        """What of ``data`` (daemon→client) may still go under a ``cut_after`` budget, and
        whether the caller must cut every connection once it sent that."""
        with self._lock:
            if self._budget is None:
                return data, False
            if len(data) < self._budget:
                self._budget -= len(data)
                return data, False
            head, self._budget = data[:self._budget], 0
            return head, True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self.refuse or time.monotonic() < self._refuse_until:
                    client.close()
                    continue
                try:
                    upstream = socket.create_connection(self._target)
                except OSError:
                    client.close()
                    continue
                for s in (client, upstream):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._socks += [client, upstream]
                self.connections += 1
                self._pipes += [_Pipe(self, client, upstream, False),
                                _Pipe(self, upstream, client, True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True, help="HOST:PORT of the daemon")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--rtt_ms", type=float, default=0.0)
    ap.add_argument("--mbit", type=float, default=0.0, help="rate per direction (0: unlimited)")
    args = ap.parse_args()
    p = WanProxy(args.target, args.rtt_ms / 1e3, args.mbit * 1e6 / 8 or None, listen=args.listen)
    print(f"wan_proxy: {p.address} -> {args.target} (rtt {args.rtt_ms:g} ms, "
          f"{args.mbit or 'unlimited'} Mbit/s)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        p.close()


if __name__ == "__main__":
    main()
