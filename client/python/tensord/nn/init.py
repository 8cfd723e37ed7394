"""Parameter initialisation, as ``torch.nn.init``: values are drawn by the daemon's random ops
(``rand``/``randn``, the session generator) and written in place under ``no_grad``."""

from __future__ import annotations

import math
from typing import Optional, Tuple

from .. import _grad, _tensor
from .._tensor import Tensor


def _fans(tensor: Tensor) -> Tuple[int, int]:
    shape = tensor.shape
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in shape[2:]:
        receptive *= s
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_values(like: Tensor, a: float, b: float) -> Tensor:
    """New values uniform on [a, b) with ``like``'s shape, dtype and device (no grad)."""
    with _grad.no_grad():
        return _tensor.call("rand_like", [like]) * (b - a) + a


def _write(tensor: Tensor, values: Tensor) -> Tensor:
    with _grad.no_grad():
        _tensor.call("copy_", [tensor, values])
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fills ``tensor`` with values uniform on [a, b)."""
    return _write(tensor, uniform_values(tensor, a, b))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fills ``tensor`` with normal samples."""
    with _grad.no_grad():
        return _write(tensor, _tensor.call("randn_like", [tensor]) * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    with _grad.no_grad():
        return _write(tensor, _tensor.call("full_like", [tensor], {"fill_value": float(val)}))


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def kaiming_bound(fan: int, a: float = 0.0, nonlinearity: str = "leaky_relu") -> float:
    """The bound of ``kaiming_uniform_``: ``gain * sqrt(3 / fan)``."""
    return calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan) if fan else 0.0


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> Tensor:
    """He initialisation, uniform: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``."""
    fan_in, fan_out = _fans(tensor)
    bound = kaiming_bound(fan_in if mode == "fan_in" else fan_out, a, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> Tensor:
    """He initialisation, normal: std ``gain / sqrt(fan)``."""
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot initialisation, uniform."""
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot initialisation, normal."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))
