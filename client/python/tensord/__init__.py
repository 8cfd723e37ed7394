"""tensord: remote eager tensors that read like PyTorch.

Every value lives in a tensord daemon; this package holds handles and sends imperative op
streams over one gRPC stream per session, batched so a program pays one round trip per value it
reads, not per op::

    import tensord as td

    td.connect()                      # TENSORD_ADDRESS / TENSORD_TOKEN, or 127.0.0.1:50051
    x = td.randn(64, 100)
    w = td.randn(100, 10)
    y = (x @ w).relu().sum(dim=1)
    print(y.shape, y[:3])             # reading values waits; building them does not

Ops the daemon's catalog has but this package does not wrap are still available by name:
``td.<op>(...)`` and ``tensor.<op>(...)``.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional

from . import _context
from ._dtype import Size, device, dtype
from ._dtype import bfloat16, bool_, float16, float32, float64, int8, int32, int64, uint8
from ._errors import (ConnectionLost, DTypeError, Error, InvalidArgumentError, NotFoundError,
                      OutOfMemoryError, PermissionDenied, ProtocolError, ShapeError,
                      UnimplementedError)
from ._grad import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._autocast import autocast
from ._ops import *  # noqa: F401,F403 (the PyTorch-named functions)
from ._ops import __all__ as _ops_all
from ._multi_ops import *  # noqa: F401,F403 (max/min/split/... with PyTorch signatures)
from ._multi_ops import __all__ as _multi_all
from ._scan_ops import *  # noqa: F401,F403 (cummax/cummin/mode/searchsorted)
from ._scan_ops import __all__ as _scan_all
from ._data_sized import argwhere, masked_select, nonzero
from ._unique import unique, unique_consecutive
from ._session import DEFAULT_ADDRESS, Session
from ._shared import SharedBuffer, empty_shared
from ._catalog_function import CatalogFunction
from ._tensor import Tensor, is_tensor
from ._tls import TlsCredentials
from ._streams import Event, Stream, current_stream, default_stream, set_stream, stream

from . import autograd, backends, nn, optim, profiler  # noqa: E402  (need the names above)
from ._serialization import load, save  # noqa: E402
from ._version import __version__  # noqa: E402

__all__ = sorted(set(_ops_all) | set(_multi_all) | set(_scan_all) | {"argwhere", "masked_select", "nonzero",
    "unique", "unique_consecutive",
    "Size", "device", "dtype", "bfloat16", "bool_", "float16", "float32", "float64", "int8",
    "int32", "int64", "uint8", "bool", "float", "double", "half", "long", "int",
    "ConnectionLost", "DTypeError", "Error", "InvalidArgumentError", "NotFoundError",
    "OutOfMemoryError", "PermissionDenied", "ProtocolError", "ShapeError", "UnimplementedError",
    "autocast", "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled", "Session",
    "Tensor", "TlsCredentials", "is_tensor", "nn", "optim", "autograd", "profiler", "save", "load", "connect", "close",
    "default_session", "synchronize", "manual_seed",
    "set_default_device", "backends", "Stream", "Event", "stream", "current_stream",
    "default_stream", "set_stream", "SharedBuffer", "empty_shared"})

for _cls in (Error, InvalidArgumentError, ShapeError, DTypeError, NotFoundError, OutOfMemoryError,
             PermissionDenied, UnimplementedError, ProtocolError, ConnectionLost, Tensor, Session,
             Size, device, dtype, Stream, Event, SharedBuffer):
    _cls.__module__ = "tensord"  # tracebacks say tensord.ShapeError, not tensord._errors...
del _cls

# PyTorch's aliases
bool = bool_  # noqa: A001
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001


class _Connection:
    """What ``connect()`` returns: the session, usable as a context manager that closes it."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def __enter__(self) -> Session:
        return self.session

    def __exit__(self, *exc: Any) -> None:
        close(self.session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)

    def __repr__(self) -> str:
        return repr(self.session)


def connect(address: Optional[str] = None, token: Optional[str] = None, **kwargs: Any
            ) -> _Connection:
    """Opens a session and makes it the default one.

    ``address`` defaults to ``$TENSORD_ADDRESS``, then ``127.0.0.1:50051``; ``token`` to
    ``$TENSORD_TOKEN``. Use it as a statement (the session stays open until ``close()`` or
    exit) or as ``with tensord.connect() as session: ...``, which closes it at the end.
    Other keyword arguments go to ``Session`` (e.g. ``credentials=TlsCredentials(...)`` for
    TLS on the stream and the bulk socket's lanes alike, ``resume=False``
    to end the session when its connection breaks instead of resuming it, ``resume_timeout=``).
    """
    address = address or os.environ.get("TENSORD_ADDRESS") or DEFAULT_ADDRESS
    token = token if token is not None else os.environ.get("TENSORD_TOKEN")
    s = Session(address, token, **kwargs)
    _context.push(s)
    return _Connection(s)


def close(session: Optional[Session] = None) -> None:
    """Closes ``session`` (default: the default session); the previous default comes back."""
    s = session or _context.current()
    if s is None:
        return
    if isinstance(s, _Connection):
        s = s.session
    _context.remove(s)
    s.close()


def default_session() -> Session:
    """The session ``tensord.<op>`` functions use (raises if not connected)."""
    return _context.default_session()


def synchronize() -> None:
    """Waits until the daemon ran every op sent so far, and raises the first op error raised
    since the previous synchronize."""
    _context.default_session().synchronize()


def manual_seed(seed: int) -> None:
    """Reseeds the session's random generator: the same seed gives the same random tensors."""
    _context.default_session().set_options(seed=seed)


def set_default_device(device: Any) -> None:
    """Where creation ops put tensors when no ``device=`` is given (``"cpu"``, ``"cuda:0"``)."""
    from ._dtype import device_str
    _context.default_session().set_options(default_device=device_str(device))


def __getattr__(name: str) -> Any:
    """Catalog ops without a hand-written wrapper: ``tensord.exp(x)`` and the like."""
    s = _context.current()
    if s is not None and name in s.catalog:
        return CatalogFunction(name)
    hint = "" if s is not None else " (ops of the daemon's catalog appear after tensord.connect())"
    raise AttributeError(f"module 'tensord' has no attribute '{name}'{hint}")


def __dir__() -> List[str]:
    s = _context.current()
    return sorted(set(globals()) | (set(s.catalog) if s is not None else set()))
