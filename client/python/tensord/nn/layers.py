"""Layers with parameters (``Linear``, ``Conv2d``, ``Embedding``, the norms) and without
(activations, ``Dropout``, ``Flatten``, pooling), as in ``torch.nn``.

Initialisation follows PyTorch's defaults and bounds (Linear/Conv2d: kaiming-uniform with
``a=sqrt(5)``, i.e. ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` for weight and bias; Embedding:
``N(0, 1)``); the values are drawn by the daemon (session generator, see
``tensord.manual_seed``), so they differ from PyTorch's draws: copy weights over with
``load_state_dict`` to compare with a PyTorch model.
"""

from __future__ import annotations

import math
import operator
from typing import Any, List, Optional, Sequence, Tuple, Union

from .. import _dtype, _grad, _multi_ops, _ops
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
        if _weight is not None:
            self.weight = Parameter(_weight)
            return
        with _grad.no_grad():
            w = _ops.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
            if padding_idx is not None:
                w[padding_idx].zero_()
        self.weight = Parameter._adopt(w)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class _NormBase(Module):
    def __init__(self, num_features: int, eps: float, momentum: Optional[float], affine: bool,
                 track_running_stats: bool, device: Any, dtype: Any) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = {"dtype": dtype, "device": device}
        if affine:
            self.weight = Parameter._adopt(_ops.ones(num_features, **kw))
            self.bias = Parameter._adopt(_ops.zeros(num_features, **kw))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _ops.zeros(num_features, **kw))
            self.register_buffer("running_var", _ops.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 _ops.zeros((), dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self._batches = 0  # mirrors num_batches_tracked for momentum=None (no download)

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, no batches tracked."""
        if self.track_running_stats:
            with _grad.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()
            self._batches = 0

    _ranks: Tuple[int, ...] = ()  # the input ranks the module accepts (empty: any from 2)

    def _check_input_dim(self, input: Tensor) -> None:
        """PyTorch's ValueError, raised here when the input's shape is already known; otherwise
        the daemon's batch_norm checks ``_ranks`` (the client does not wait for the shape of a
        result still being computed: that would stall the pipeline once per layer)."""
        if not self._ranks or (input._info is None and _multi_ops.daemon_checks_ranks(input)):
            return
        if input.dim() not in self._ranks:
            want = "D or ".join(str(r) for r in self._ranks)
            raise ValueError(f"expected {want}D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with _grad.no_grad():
                self.num_batches_tracked.add_(1)
            self._batches += 1
            if self.momentum is None:
                factor = 1.0 / self._batches
        bn_training = self.training or self.running_mean is None
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, factor, self.eps, _ranks=self._ranks)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_NormBase):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` input."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    _ranks = (2, 3)


class BatchNorm2d(_NormBase):
    """Batch normalisation of NCHW input; running statistics are buffers that the daemon's
    ``batch_norm`` updates in place in training mode."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)

    _ranks = (4,)


class LayerNorm(Module):
    """Normalisation over the last dims (``normalized_shape``), then ``* weight + bias``."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        kw = {"dtype": dtype, "device": device}
        if elementwise_affine:
            self.weight = Parameter._adopt(_ops.ones(self.normalized_shape, **kw))
            if bias:
                self.bias = Parameter._adopt(_ops.zeros(self.normalized_shape, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


# ------------------------------------------------------------ no parameters

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


class MaxPool2d(Module):
    """2-d max pooling."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, "
                f"padding={self.padding}")


class AvgPool2d(Module):
    """2-d average pooling."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool2d(Module):
    """Average pooling to an ``output_size`` grid."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


__all__: List[str] = [
    "Identity", "Linear", "Conv2d", "Embedding", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
    "ReLU", "GELU", "Sigmoid", "Tanh", "SiLU", "LeakyReLU", "Softmax", "LogSoftmax", "Dropout",
    "Flatten", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d"]
