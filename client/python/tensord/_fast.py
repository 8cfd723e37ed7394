"""The optional C hot path (``_speedups.c``): the binary operators of two Tensors,
``Tensor.__del__`` and ``Session.call``'s common case without Python frames, the Release
entry of a packed run, and an Ack's packed metas (``_packed_meta`` uses ``speedups`` directly).

Built from the checkout by ``tools/build_python_ext.sh`` (and by ``pip install`` when a compiler
is there); absent, or with ``TENSORD_PURE_PYTHON=1`` (``_options``), the client runs the same path in Python,
which stays the reference (tests/python/test_speedups.py compares the two).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import _grad, _options, _site, _wire


def _load() -> Optional[Any]:
    if _options.pure_python():
        return None
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _speedups


speedups = _load()
#: ``Session.call``'s common case in C, or None: (session, inputs, site_field, op_part) ->
#: (first handle, seq, its varint), or None where the Python method must run
session_call: Optional[Callable[..., Any]] = speedups.session_call if speedups else None
#: ``_wire.run_release`` of a list of handles, in C where built (a Release per batch of ops)
run_release: Callable[[Any], bytes] = speedups.run_release if speedups else _wire.run_release


def operator_method(name: str, method: Callable[[Any, Any], Any]) -> Any:
    """The operator method of op ``name``: the C one wrapping ``method`` (its Python twin, which
    it calls for every case but two Tensors of one session), else ``method``."""
    return speedups.binary_method(name, method) if speedups else method


def finalizer(method: Callable[[Any], None]) -> Any:
    """``Tensor.__del__``: the C one wrapping ``method`` (its Python twin), else ``method``."""
    return speedups.finalizer(method) if speedups else method


def init(tensor_type: type) -> None:
    """Turns the C paths on once ``Tensor`` exists."""
    if speedups:
        speedups.init(tensor_type, _grad.state, _site.site_field, _site._fields, _site._INSIDE)
