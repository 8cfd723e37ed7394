"""The module-level default session (set by ``tensord.connect``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, List, Optional

from ._errors import ConnectionLost

if TYPE_CHECKING:  # sessions import this module (the default session of a SharedBuffer)
    from ._session import Session

_lock = threading.Lock()
_stack: "List[Session]" = []  # connect() pushes; closing a session pops it wherever it is


def current() -> Optional[Session]:
    """The default session, or None."""
    return _stack[-1] if _stack else None


def default_session() -> Session:
    """The default session; raises if ``tensord.connect()`` was not called."""
    if not _stack:
        raise ConnectionLost("no tensord session: call tensord.connect() first (or pass "
                             "tensors that belong to a session)", op="connect")
    return _stack[-1]


def push(s: Session) -> None:
    with _lock:
        _stack.append(s)


def remove(s: Session) -> None:
    with _lock:
        if s in _stack:
            _stack.remove(s)
