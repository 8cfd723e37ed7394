"""``OpTable``: a dict from ATen overloads to functions, also readable by ``id(op)``.

Note [OpTable]: an ``OpOverload``'s ``__hash__`` is Python code (``torch._ops``), ~0.3 us per
dict lookup, and the device looks an op up several times per call (Note [Direct calls]), so its
hot path reads ``by_id`` (an int key). Every overload in ``by_id`` is also a key of the dict
itself, which keeps it alive: an id there always names the op it was stored for.
"""

from __future__ import annotations

from typing import Any, Callable, Dict


class OpTable(dict):
    """``{op: fn}`` with ``by_id`` (``{id(op): fn}``) kept in step on every write."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: Dict[int, Callable[..., Any]] = {}

    def __setitem__(self, op: Any, fn: Callable[..., Any]) -> None:
        super().__setitem__(op, fn)
        self.by_id[id(op)] = fn

    def __delitem__(self, op: Any) -> None:
        super().__delitem__(op)
        del self.by_id[id(op)]

    def pop(self, op: Any, *default: Any) -> Any:
        self.by_id.pop(id(op), None)
        return super().pop(op, *default)

    def update(self, *args: Any, **kwargs: Any) -> None:  # noqa: D102 (dict's)
        for op, fn in dict(*args, **kwargs).items():
            self[op] = fn

    def setdefault(self, op: Any, fn: Any = None) -> Any:  # noqa: D102 (dict's)
        if op not in self:
            self[op] = fn
        return self[op]
