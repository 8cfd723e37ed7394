"""``Parameter``: a leaf tensor that requires grad and that ``Module`` registers, as
``torch.nn.Parameter``."""

from __future__ import annotations

from typing import Any, Optional

from .. import _ops
from .._site import call_site
from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: ``Parameter(data, requires_grad=True)`` shares
    ``data``'s storage (a detached alias, as in PyTorch) and is a leaf that requires grad."""

    __slots__ = ()

    def __new__(cls, data: Optional[Tensor] = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = _ops.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): expected a tensord Tensor, got {type(data).__name__}")
        return cls._adopt(data.detach(), requires_grad)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # __new__ did the work
        pass

    @classmethod
    def _adopt(cls, t: Tensor, requires_grad: bool = True) -> "Parameter":
        """Turns ``t``, a fresh leaf nobody else holds, into a Parameter without a new handle
        (the layers' initialisation uses this: no extra op per parameter)."""
        t.__class__ = cls
        if requires_grad:
            t._session.set_requires_grad(t._handle, True, call_site())
        t._rg = bool(requires_grad)
        return t  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: Any) -> Any:
        raise TypeError("tensord Parameters hold daemon handles; save values with "
                        "tensord.save(module.state_dict(), path)")
