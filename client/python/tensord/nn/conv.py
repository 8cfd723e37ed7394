"""``Conv1d``, ``ConvTranspose1d`` and ``ConvTranspose2d`` as in ``torch.nn`` (``Conv2d`` is in
``layers``), over ``functional``'s convolutions.

Weights are ``(out, in/groups, *kernel)`` for a convolution and ``(in, out/groups, *kernel)``
for a transposed one, as PyTorch lays them out, so a PyTorch state dict loads as it is.
Initialisation is PyTorch's: kaiming-uniform with ``a=sqrt(5)``, i.e. ``U(-b, b)`` with
``b = 1/sqrt(fan_in)`` for weight and bias, ``fan_in = weight.shape[1] * prod(kernel)``
(drawn by the daemon, so the values differ from PyTorch's draws).
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence, Tuple, Union

from .._tensor import Tensor
from . import functional as F
from ._functional_conv import as_ints
from .layers import _uniform_param
from .module import Module


class _ConvNd(Module):
    """The parameters and options shared by the 1-d and transposed convolutions."""

    _nd = 1
    _transposed = False
    _op = "conv1d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, groups: int, bias: bool, padding_mode: str,
                 output_padding: Any, device: Any, dtype: Any) -> None:
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise NotImplementedError(f"not supported yet: {name}(padding_mode="
                                      f"{padding_mode!r}) (use padding_mode='zeros', with "
                                      "the input padded beforehand)")
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels must be divisible by groups")
        n, op = self._nd, self._op
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = tuple(as_ints(kernel_size, n, "kernel_size", op))
        self.stride = tuple(as_ints(stride, n, "stride", op))
        if isinstance(padding, str):
            if padding not in ("same", "valid") or self._transposed:
                raise ValueError(f"{name}: invalid padding {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding: Union[str, Tuple[int, ...]] = padding
        else:
            self.padding = tuple(as_ints(padding, n, "padding", op))
        self.dilation = tuple(as_ints(dilation, n, "dilation", op))
        self.output_padding = tuple(as_ints(output_padding, n, "output_padding", op))
        self.transposed, self.groups, self.padding_mode = self._transposed, groups, padding_mode
        if self._transposed:
            wshape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            wshape = (out_channels, in_channels // groups) + self.kernel_size
        fan_in = wshape[1] * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = _uniform_param(wshape, bound, dtype, device)
        if bias:
            self.bias = _uniform_param((out_channels,), bound, dtype, device)
        else:
            self.register_parameter("bias", None)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv1d(_ConvNd):
    """1-d convolution over ``(N, C, L)`` or ``(C, L)`` input; weight ``(out, in/groups, k)``.
    ``padding`` may be ints, ``'valid'`` or ``'same'``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, 0, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, output_padding, device, dtype)

    def _output_padding(self, input: Tensor, output_size: Optional[Sequence[int]]
                        ) -> List[int]:
        """``output_padding``, or the one that makes the output ``output_size`` (its last
        ``nd`` entries), as PyTorch's ``_output_padding`` computes it."""
        if output_size is None:
            return list(self.output_padding)
        n = self._nd
        want = [int(s) for s in output_size][-n:]
        if len(want) != n:
            raise ValueError(f"{type(self).__name__}: output_size must have {n} or more "
                             f"elements (got {list(output_size)})")
        spatial = list(input.shape)[-n:]
        out: List[int] = []
        for d in range(n):
            smallest = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]  # type: ignore
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            largest = smallest + self.stride[d] - 1
            if not smallest <= want[d] <= largest:
                raise ValueError(f"{type(self).__name__}: requested an output size of {want}, "
                                 f"but valid sizes range from {smallest} to {largest} (for "
                                 f"an input of {spatial})")
            out.append(want[d] - smallest)
        return out

    def forward(self, input: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        fn = F.conv_transpose1d if self._nd == 1 else F.conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over ``(N, C, L)`` or ``(C, L)`` input; weight
    ``(in, out/groups, k)``; ``forward(input, output_size=None)``."""

    _op = "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over NCHW or CHW input; weight
    ``(in, out/groups, kH, kW)``; ``forward(input, output_size=None)``."""

    _nd = 2
    _op = "conv_transpose2d"


__all__: List[str] = ["Conv1d", "ConvTranspose1d", "ConvTranspose2d"]
