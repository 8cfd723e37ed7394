"""Cross-memory attach's binding (docs/protocol.md "Cross-memory attach"; the bytes are
``proto/cma_bind.h``'s): a same-host client process binds its session to itself by connecting
to the daemon's unix socket ``Welcome.cma_socket`` ("@name": Linux's abstract namespace) and
sending ``TDCMA001`` and ``Welcome.cma_ticket``; the daemon learns the process from the kernel
(SO_PEERCRED), never from these bytes, and answers one byte. Every Welcome carries a new
ticket (a resume drops the binding), and each ticket admits one try.

``CmaBinding`` is a session's state of it: bound or not, by which process, and whether the
path was found to work (a probe, once).
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any, Callable, Optional

MAGIC = b"TDCMA001"
TICKET_BYTES = 32
BOUND = b"Y"
TIMEOUT = 2.0  # seconds the daemon may take to answer


def bind(welcome: Any) -> bool:
    """Binds the session of ``welcome`` to this process; True when the daemon agreed."""
    name, ticket = welcome.cma_socket, welcome.cma_ticket
    if not welcome.cma or not name or len(ticket) != TICKET_BYTES:
        return False
    address = "\0" + name[1:] if name.startswith("@") else name
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(TIMEOUT)
            s.connect(address)
            s.sendall(MAGIC + ticket.encode("ascii"))
            return s.recv(1) == BOUND
    except (OSError, UnicodeEncodeError):
        return False


class CmaBinding:
    """Whether a session may move bytes by cross-memory attach from this process. Thread-safe.

    The session binds once its region is mapped (``bind``) and again after a resume
    (``rebind``: the daemon dropped the binding). A forked child never uses it: the daemon would
    read and write the process that bound (the parent). The first use runs the session's probe
    (``usable``): the kernel may still refuse the daemon's copies (Yama's ptrace_scope, a
    seccomp policy)."""

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted  # the session allows it and has a region
        self.bound = False
        self._pid = os.getpid()
        self._works: Optional[bool] = None  # unknown until the first big upload probes
        self._lock = threading.Lock()

    def bind(self, welcome: Any) -> None:
        """After the region of ``welcome`` was mapped."""
        if self.wanted:
            self.bound = bind(welcome)

    def rebind(self, welcome: Any) -> None:
        """After a resume whose Welcome is ``welcome``, before anything is resent."""
        if self.bound and os.getpid() == self._pid:
            self.bound = bind(welcome)

    def usable(self, probe: Callable[[], bool]) -> bool:
        """Whether uploads may take the path: bound, this is the process that bound, and
        ``probe()`` (run the first time only) said the daemon's copies work."""
        if os.getpid() != self._pid or not self.bound:
            return False
        if self._works is None:
            with self._lock:
                if self._works is None:
                    self._works = probe()
        return self._works
