"""The one tensord session behind the ``tensord`` PyTorch device.

Every tensor on ``tensord:0`` is a handle of this session. It opens lazily, at the first tensor
created on the device, from ``$TENSORD_ADDRESS`` / ``$TENSORD_TOKEN`` (else the native client's
default address), unless ``connect()`` opened it first with explicit arguments.

Note [tensord:N]: PyTorch's device ``tensord:0`` is the session's default device on the daemon
(``cpu`` unless the daemon runs with ``--default_device`` or ``connect(device=...)`` chose one,
e.g. ``cuda:0``). PyTorch's Python PrivateUse1 device guard reports exactly one device, so
``tensord:1`` and above are refused; to use another daemon device, connect with ``device=``.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

from .._session import DEFAULT_ADDRESS, Session

_lock = threading.Lock()
_session: Optional[Session] = None
_seed: Optional[int] = None  # a manual_seed that came before the session
_device: Optional[str] = None  # connect(device=...): the daemon device behind tensord:0


def connect(address: Optional[str] = None, token: Optional[str] = None, *,
            device: Optional[str] = None, **kwargs: Any) -> Session:
    """Opens the device's session (closing one opened before) and returns it.

    ``address`` defaults to ``$TENSORD_ADDRESS``, then ``127.0.0.1:50051``; ``token`` to
    ``$TENSORD_TOKEN``; ``device`` (e.g. ``"cuda:0"``) is the daemon device that ``tensord:0``
    stands for (default: the daemon's default device; Note [tensord:N]). Other keyword arguments
    go to ``tensord.Session``. Tensors of a closed session can no longer be used.
    """
    global _session, _device
    address = address or os.environ.get("TENSORD_ADDRESS") or DEFAULT_ADDRESS
    token = token if token is not None else os.environ.get("TENSORD_TOKEN")
    s = Session(address, token, **kwargs)
    # The daemon records no autograd tape for these handles: PyTorch's engine runs on the client.
    s.set_options(grad_enabled=False)
    if device:
        s.set_options(default_device=device)
    if _seed is not None:
        s.set_options(seed=_seed)
    with _lock:
        old, _session, _device = _session, s, device or None
    if old is not None:
        old.close()
    return s


def session() -> Session:
    """The device's session, opened from the environment on first use."""
    s = _session
    if s is not None:
        return s
    with _lock:
        if _session is not None:
            return _session
    return connect()


def current() -> Optional[Session]:
    """The device's session if one is open, without opening one."""
    return _session


def close() -> None:
    """Ends the device's session (the daemon frees every handle it held)."""
    global _session
    with _lock:
        s, _session = _session, None
    if s is not None:
        s.close()


def daemon_device() -> Optional[str]:
    """The daemon device ``connect(device=...)`` chose, or None (the daemon's default)."""
    return _device


def manual_seed(seed: int) -> None:
    """Seeds the daemon's generator for this session (now, or when it opens)."""
    global _seed
    _seed = int(seed)
    s = _session
    if s is not None:
        s.set_options(seed=_seed)
