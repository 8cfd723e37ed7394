"""Normalisation layers as in ``torch.nn``: ``BatchNorm1d``/``BatchNorm2d`` (running
statistics kept as buffers on the daemon), ``LayerNorm`` and ``GroupNorm``; weights start as
ones, biases as zeros, as in PyTorch."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .. import _dtype, _grad, _multi_ops, _ops
from .._tensor import Tensor
from . import functional as F
from .module import Module
from .parameter import Parameter


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


class GroupNorm(Module):
    """Normalisation of ``(N, C, *)`` input over groups of ``num_channels / num_groups``
    channels, then a per-channel ``* weight + bias`` (ones and zeros at first) when
    ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        kw = {"dtype": dtype, "device": device}
        if affine:
            self.weight = Parameter._adopt(_ops.ones(num_channels, **kw))
            self.bias = Parameter._adopt(_ops.zeros(num_channels, **kw))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        shape = list(input.shape)
        if len(shape) < 2 or shape[1] != self.num_channels:
            raise RuntimeError(f"GroupNorm: expected input of shape (N, {self.num_channels}, "
                               f"*), but got input of shape {shape}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


__all__: List[str] = ["BatchNorm1d", "BatchNorm2d", "LayerNorm", "GroupNorm"]
