"""``CatalogFunction``: a catalog op as a Python function (``td.<op>``, ``x.<op>``, and
``nn.functional`` names the catalog has but this package does not spell out)."""

from __future__ import annotations

from typing import Any, Optional

from . import _context
from ._catalog import bind_positional
from ._tensor import Tensor, _session_of, call_op, missing_op


class CatalogFunction:
    """A catalog op as a Python function: ``f(*inputs, *attrs, **attrs)``.

    Positional arguments fill the op's inputs first (up to its arity; a list for variadic ops),
    then its attributes in schema order. The catalog is read at call time from the session of
    the tensor arguments (or the default session).
    """

    def __init__(self, name: str, bound: Optional["Tensor"] = None) -> None:
        self.__name__ = self.__qualname__ = name
        self._bound = bound

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        s = self._bound._session if self._bound is not None else _context.current()
        op = s.catalog.get(self.__name__) if s is not None else None
        return f"{op.signature()}\n\n{op.doc}" if op is not None else "a tensord catalog op"

    def __repr__(self) -> str:
        return f"<tensord op {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._bound is not None:
            args = (self._bound,) + args
        s = _session_of(args)
        op = s.catalog.get(self.__name__)
        if op is None:
            raise missing_op(self.__name__, s)
        nout = kwargs.pop("_num_outputs", None)
        if op.max_inputs < 0:  # variadic: a sequence of tensors first, as torch.cat
            if args and isinstance(args[0], (list, tuple)):
                inputs, extra = list(args[0]), args[1:]
            else:
                k = 0
                while k < len(args) and isinstance(args[k], Tensor):
                    k += 1
                inputs, extra = list(args[:k]), args[k:]
        else:
            inputs = list(args[: op.max_inputs])
            extra = args[op.max_inputs:]
            for key in ("input", "other"):
                if key in kwargs and key not in op.by_name:
                    inputs.append(kwargs.pop(key))
            while inputs and inputs[-1] is None and len(inputs) > op.min_inputs:
                inputs.pop()
        if any(isinstance(v, Tensor) for v in extra):
            raise TypeError(f"{op.name}() takes at most {op.max_inputs} tensor inputs, got "
                            f"{len(inputs) + sum(isinstance(v, Tensor) for v in extra)}")
        return call_op(s, op, inputs, bind_positional(op, extra, kwargs), nout)
