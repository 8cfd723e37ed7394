"""Cross-memory attach's binding (docs/protocol.md "Cross-memory attach"; the bytes are
``proto/cma_bind.h``'s): a same-host client process binds its session to itself by connecting
to the daemon's unix socket ``Welcome.cma_socket`` ("@name": Linux's abstract namespace) and
sending ``TDCMA001`` and ``Welcome.cma_ticket``; the daemon learns the process from the kernel
(SO_PEERCRED), never from these bytes, and answers one byte. Every Welcome carries a new
ticket (a resume drops the binding), and each ticket admits one try."""

from __future__ import annotations

import socket
from typing import Any

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
