"""Functional neural-network ops, as ``torch.nn.functional``.

``relu`` and ``linear`` are written here (``linear`` composes ``matmul`` and ``add`` where the
daemon has no ``linear`` op). Every other catalog op is reachable by name too
(``F.softmax(x, dim=1)``, ``F.cross_entropy(logits, target)``, ``F.conv2d(...)`` once the daemon
has them), with the op's attributes as keyword arguments.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import _context, _tensor
from .._tensor import CatalogFunction, Tensor, call


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` elementwise; ``inplace=True`` needs the daemon's ``relu_``."""
    if inplace:
        call("relu_", [input], why="relu(inplace=True)")
        return input
    return call("relu", [input])


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``input @ weight.T + bias``: ``weight`` is ``(out_features, in_features)``."""
    if "linear" in _tensor._session_of([input]).catalog:
        return call("linear", [input, weight] + ([bias] if bias is not None else []))
    out = call("matmul", [input, call("transpose", [weight], {"dim0": 0, "dim1": 1})])
    return out if bias is None else call("add", [out, bias])


def __getattr__(name: str) -> Any:
    s = _context.current()
    if s is not None and name in s.catalog:
        return CatalogFunction(name)
    raise AttributeError(f"module 'tensord.nn.functional' has no attribute '{name}'"
                         + ("" if s is not None else " (catalog ops appear after connect())"))
