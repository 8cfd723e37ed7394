"""The errors a tensord user sees.

Errors stay with the values they spoil (docs/protocol.md): a failing op poisons its outputs, and
the error is raised when a spoiled value is touched (``numpy()``, ``item()``, ``shape``,
``synchronize()``). The message names the op, the user's call site and the reason::

    tensord.ShapeError: matmul at train.py:42: shapes [64, 100] and [64, 10] cannot be multiplied

``Error`` derives from ``RuntimeError``, as PyTorch's errors do, so ``except RuntimeError`` keeps
working for code written against PyTorch.
"""

from __future__ import annotations

import re
from typing import Any, Type

# google.rpc.Code / absl::StatusCode values.
OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16

CODE_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


class Error(RuntimeError):
    """Base class of every error the daemon reports.

    Attributes: ``code`` (the gRPC status code as an int), ``op`` (the op that failed first),
    ``site`` (its call site, ``file.py:line``) and ``reason`` (the daemon's message).
    """

    def __init__(self, reason: str, *, code: int = UNKNOWN, op: str = "", site: str = "") -> None:
        self.code = code
        self.op = op
        self.site = site
        self.reason = reason
        head = op + (f" at {site}" if site else "") if op else (site or "")
        super().__init__(f"{head}: {reason}" if head else reason)

    @property
    def code_name(self) -> str:
        """The status code's name, e.g. ``"INVALID_ARGUMENT"``."""
        return CODE_NAMES.get(self.code, str(self.code))


class InvalidArgumentError(Error):
    """The daemon rejected an argument (``INVALID_ARGUMENT``)."""


class ShapeError(InvalidArgumentError):
    """Shapes that do not fit the op (``INVALID_ARGUMENT`` about shapes, sizes or dims)."""


class DTypeError(InvalidArgumentError):
    """A dtype the op does not accept (``INVALID_ARGUMENT`` about dtypes)."""


class NotFoundError(Error):
    """A handle the session does not hold (``NOT_FOUND``)."""


class OutOfMemoryError(Error):
    """Out of device memory or over the session's quota (``RESOURCE_EXHAUSTED``)."""


class PermissionDenied(Error):
    """Bad or missing token, or not allowed (``PERMISSION_DENIED``/``UNAUTHENTICATED``)."""


class UnimplementedError(Error, NotImplementedError):
    """The op is not available on that device (``UNIMPLEMENTED``)."""


class ProtocolError(Error):
    """Client and daemon disagree about the protocol (``FAILED_PRECONDITION`` at Hello, or a
    reply the client cannot make sense of)."""


class ConnectionLost(Error):
    """The session's stream ended or could not be opened (``UNAVAILABLE`` and the like)."""


_SHAPE_WORDS = re.compile(r"shape|size|dim|broadcast|rank|multiplied|numel|element", re.I)
_DTYPE_WORDS = re.compile(r"dtype|floating|integral|\b(u?int(8|16|32|64)|float(16|32|64)|"
                          r"bfloat16|bool)\b", re.I)


def error_class(code: int, reason: str) -> Type[Error]:
    """The Error subclass for a status code (and, for INVALID_ARGUMENT, its message)."""
    if code == INVALID_ARGUMENT:
        if _DTYPE_WORDS.search(reason):
            return DTypeError
        if _SHAPE_WORDS.search(reason):
            return ShapeError
        return InvalidArgumentError
    return {
        NOT_FOUND: NotFoundError,
        RESOURCE_EXHAUSTED: OutOfMemoryError,
        PERMISSION_DENIED: PermissionDenied,
        UNAUTHENTICATED: PermissionDenied,
        UNIMPLEMENTED: UnimplementedError,
        FAILED_PRECONDITION: ProtocolError,
        UNAVAILABLE: ConnectionLost,
        CANCELLED: ConnectionLost,
    }.get(code, Error)


def from_status(status: Any) -> Error:
    """An Error from a wire ``tensord.v1.Status`` (code must be non-zero)."""
    reason = status.message
    if status.op and reason.startswith(status.op + ": "):  # "matmul at x.py:3: matmul: ..."
        reason = reason[len(status.op) + 2:]
    return error_class(status.code, reason)(reason, code=status.code, op=status.op,
                                            site=status.site)


def from_rpc_error(err: Any, what: str = "session") -> Error:
    """An Error from a ``grpc.RpcError`` that ended the stream."""
    try:
        code = err.code().value[0]
        details = err.details() or str(code)
    except Exception:  # not a grpc.Call
        code, details = UNAVAILABLE, str(err)
    return error_class(code, details)(details, code=code, op=what)


def identity(err: Error) -> tuple:
    """What tells two reports of one daemon error apart from other errors: a spoiled value's
    error and the next SyncDone's report of it carry the same op, site, code and reason."""
    return (type(err), err.code, err.reason, err.op, err.site)


def fresh(err: Error) -> Error:
    """A copy of ``err`` to raise (raising one exception object twice chains tracebacks)."""
    return type(err)(err.reason, code=err.code, op=err.op, site=err.site)
