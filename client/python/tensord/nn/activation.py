"""Activation layers as in ``torch.nn`` (no parameters): ``ReLU``, ``GELU``, ``Sigmoid``,
``Tanh``, ``SiLU``, ``LeakyReLU``, ``Softmax``, ``LogSoftmax``."""

from __future__ import annotations

from typing import Any, List, Optional

from .._tensor import Tensor
from . import functional as F
from .module import Module


class _Simple(Module):
    _fn: Any = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class ReLU(Module):
    """``max(x, 0)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)


class GELU(Module):
    """Gaussian error linear unit (``approximate='none'`` or ``'tanh'``)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'"


class Sigmoid(_Simple):
    """Logistic sigmoid."""

    _fn = staticmethod(F.sigmoid)


class Tanh(_Simple):
    """Hyperbolic tangent."""

    _fn = staticmethod(F.tanh)


class SiLU(_Simple):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(F.silu)


class LeakyReLU(Module):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope)


class Softmax(Module):
    """Softmax over ``dim``."""

    def __init__(self, dim: Optional[int] = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class LogSoftmax(Softmax):
    """Log-softmax over ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


__all__: List[str] = ["ReLU", "GELU", "Sigmoid", "Tanh", "SiLU", "LeakyReLU", "Softmax",
                      "LogSoftmax"]
