"""Layers with parameters (``Linear``, ``Conv2d``, ``Embedding``) and the shape and noise
layers (``Identity``, ``Dropout``, ``Flatten``), as in ``torch.nn``; the norms are in
``normalization``, activations in ``activation``, pooling in ``pooling``.

Initialisation follows PyTorch's defaults and bounds (Linear/Conv2d: kaiming-uniform with
``a=sqrt(5)``, i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weight and bias; Embedding:
``N(0, 1)``); the values are drawn by the daemon (session generator, see
``tensord.manual_seed``), so they differ from PyTorch's draws: copy weights over with
``load_state_dict`` to compare with a PyTorch model.
"""

from __future__ import annotations

import math
import operator
from typing import Any, List, Optional, Sequence, Union

from .. import _grad, _ops
from .._tensor import Tensor
from . import functional as F
from .module import Module
from .parameter import Parameter


def _uniform_param(shape: Sequence[int], bound: float, dtype: Any, device: Any) -> Parameter:
    with _grad.no_grad():
        t = _ops.rand(*shape, dtype=dtype, device=device) * (2 * bound) - bound
    return Parameter._adopt(t)


def _pair(v: Union[int, Sequence[int]]) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (operator.index(v),) * 2


class Identity(Module):
    """Returns its input."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = _uniform_param((out_features, in_features), bound, dtype, device)
        if bias:
            self.bias = _uniform_param((out_features,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Conv2d(Module):
    """2-d convolution over NCHW input; weight ``(out, in/groups, kH, kW)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("Conv2d: only padding_mode='zeros' is supported")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self.dilation, self.groups = _pair(dilation), groups
        fan_in = in_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = _uniform_param((out_channels, in_channels // groups) + self.kernel_size,
                                     bound, dtype, device)
        if bias:
            self.bias = _uniform_param((out_channels,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0, 0):
            s += f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class Embedding(Module):
    """A lookup table: ``weight[indices]``; weight ``(num_embeddings, embedding_dim)``
    initialised ``N(0, 1)`` (the ``padding_idx`` row zero)."""

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Optional[Tensor] = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is not None:
            self.weight = Parameter(_weight)
            return
        with _grad.no_grad():
            w = _ops.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
            if padding_idx is not None:
                w[padding_idx].zero_()
        self.weight = Parameter._adopt(w)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class Dropout(Module):
    """Zeroes elements with probability ``p`` in training mode (the daemon draws the mask)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


__all__: List[str] = ["Identity", "Linear", "Conv2d", "Embedding", "Dropout", "Flatten"]
