"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, as in PyTorch.

The mode is thread-local on the client. Each session remembers the mode it last told the daemon
and sends ``SetOptions{grad_enabled}`` in front of the next op whose thread's mode differs, so
the daemon sees the mode of the thread that issued each op, in stream order, and entering
``no_grad`` costs nothing until an op runs under it.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True  # a thread that never changed its mode: the class default, no lookup miss


# Read on every op (``Session.call`` reads ``state.enabled`` directly).
state = _State()
_state = state


def is_grad_enabled() -> bool:
    """Whether ops issued by this thread record autograd history."""
    return state.enabled


class _GradMode:
    _mode = True

    def __init__(self) -> None:
        self._prev: list = []

    def __enter__(self) -> None:
        self._prev.append(is_grad_enabled())
        _state.enabled = self._mode

    def __exit__(self, *exc: Any) -> None:
        _state.enabled = self._prev.pop()

    def __call__(self, fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):  # noqa: N801 (PyTorch's name)
    """Context manager and decorator that disables gradient recording for ops it encloses."""

    _mode = False


class enable_grad(_GradMode):  # noqa: N801
    """Context manager and decorator that enables gradient recording (inside ``no_grad``)."""

    _mode = True


class set_grad_enabled(_GradMode):  # noqa: N801
    """Sets grad mode on or off: as a function call, or as a context manager that restores it."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._mode = bool(mode)
        self._prev.append(is_grad_enabled())
        _state.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _state.enabled = self._prev.pop()
