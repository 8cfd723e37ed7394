"""The bulk socket (docs/protocol.md "Bulk socket"; part of ``Session``): without a shared-memory
region (another host, or ``shm=False``), uploads and downloads of ``MIN_BYTES`` or more move
their bytes on a plain TCP connection beside the stream, when the daemon offers one
(``Welcome.bulk_port``): one ``sendall`` or ``recv_into`` straight between the array and the
kernel, instead of 1-4 MiB gRPC messages that grpcio copies several times under the GIL.

The command still goes on the stream; its bytes follow on the socket in command order. A bulk
transfer is exclusive (``_exclusive_locked``: no other thread's command gets between), and the
session lock is released only around the socket I/O itself, so the receiver thread goes on
applying Acks meanwhile. ``TENSORD_BULK=0`` or ``connect(bulk=False)`` turns it off."""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, Optional, Tuple

import numpy as np

from . import _errors

MIN_BYTES = 1 << 20
_MAGIC = b"TDBULK01"  # server/bulk_socket.h
_TOKEN_BYTES = 32
_ACCEPTED = b"Y"


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


def wanted(address: str, bulk: Optional[bool]) -> bool:
    """Whether to ask for one (``Hello.bulk``)."""
    if bulk is None:
        bulk = os.environ.get("TENSORD_BULK", "1") != "0"
    return bulk and tcp_host(address) is not None


class BulkSocket:
    """The bulk socket methods of ``Session``."""

    def _bulk_usable(self) -> bool:
        """Whether transfers may use it; connects the first time (once: a refusal or a failed
        transfer leaves them on the stream for the session's life)."""
        if self._bulk_state is None:
            with self._bulk_lock:
                if self._bulk_state is None:
                    self._bulk_sock = self._bulk_connect()
                    self._bulk_state = self._bulk_sock is not None
        return bool(self._bulk_state)

    def _bulk_connect(self) -> Optional[socket.socket]:
        w = self.welcome
        host = tcp_host(self.address)
        if (not self._bulk_wanted or self._shm is not None or not w.bulk_port
                or len(w.bulk_token) != _TOKEN_BYTES or host is None):
            return None
        try:
            sock = socket.create_connection((host, w.bulk_port), timeout=10.0)
        except OSError:
            return None
        try:
            sock.sendall(_MAGIC + w.bulk_token.encode())
            if sock.recv(1) != _ACCEPTED:
                sock.close()
                return None
            sock.settimeout(None)  # a transfer may wait for queued work: no timeout
        except OSError:
            sock.close()
            return None
        return sock

    def _bulk_drop(self) -> None:
        """After a failed transfer (or at close): the socket is closed and not used again."""
        self._bulk_state = False
        sock, self._bulk_sock = self._bulk_sock, None
        if sock is not None:
            sock.close()

    def _bulk_io(self, what: str, move: Any) -> None:
        """Runs ``move(sock)`` (the socket I/O) with the session lock released."""
        sock = self._bulk_sock
        self._lock.release()
        try:
            move(sock)
        except OSError as e:
            self._bulk_drop()
            raise _errors.ConnectionLost(f"{what}: the bulk socket to tensord broke ({e})",
                                         code=_errors.UNAVAILABLE, op=what.split()[0]) from None
        finally:
            self._lock.acquire()

    def _put_bulk_locked(self, raw: memoryview, fields: Any) -> int:
        """One Put (``fields(put)`` fills it) whose ``raw`` bytes follow on the socket; returns
        its seq once they are sent (then the kernel's: the caller may reuse the array). A
        failure poisons the handle on the daemon too. Lock held, transfer exclusive."""
        cmd = self._add_locked()
        p = cmd.put
        fields(p)
        p.last = True
        p.bulk_size = raw.nbytes
        seq = cmd.seq
        handle = p.handle
        self._flush_locked()  # the Put first; resent after a resume, it finds the same bytes
        self._bulk_io(f"upload of handle {handle}", lambda sock: sock.sendall(raw))
        return seq

    def _get_bulk_locked(self, handle: int, site: str, nbytes: Optional[int],
                         out: Optional[np.ndarray]) -> Tuple[Any, Any]:
        """(TensorMeta, bytes) of ``handle``'s ``nbytes`` (None: not known yet), read from the
        socket into ``out`` (a uint8 array of ``nbytes``) or a new array; raises the handle's
        error. The daemon may answer on the stream instead (under 1 MiB, or a device tensor).
        Lock held, transfer exclusive."""
        rid, p = self._request_locked()
        cmd = self._add_locked()
        p.seq = cmd.seq
        g = cmd.get
        g.handle, g.request_id, g.site, g.bulk = handle, rid, site, True
        self._flush_locked()
        self._wait_locked(p, rid)
        if p.error is not None or p.shm_size == 0:  # an error, or answered on the stream
            return self._stream_answer(p, handle, out)
        if p.shm_size != p.total or (nbytes is not None and p.total != nbytes):
            self._bulk_drop()  # its bytes can no longer be matched to requests
            raise _errors.ProtocolError(f"the daemon answered the bulk Get of handle {handle} "
                                        f"with {p.shm_size} of {p.total} bytes; {nbytes} were "
                                        "asked", op="get")
        nbytes = p.total
        dst = out if out is not None else np.empty(nbytes, dtype=np.uint8)

        def receive(sock: socket.socket) -> None:
            view = memoryview(dst).cast("B")
            got = 0
            while got < nbytes:
                n = sock.recv_into(view[got:])
                if n == 0:
                    raise OSError(f"closed after {got} of {nbytes} bytes")
                got += n
        self._bulk_io(f"download of handle {handle}", receive)
        return p.meta, dst


def init(session: Any, bulk: Optional[bool]) -> None:
    """The ``Session`` fields of this mixin (before the Hello: it says ``wanted``)."""
    session._bulk_wanted = wanted(session.address, bulk)
    session._bulk_state = None  # unknown until the first big transfer connects
    session._bulk_sock = None
    session._bulk_lock = threading.Lock()
