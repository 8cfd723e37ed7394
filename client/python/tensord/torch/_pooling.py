"""The pools with indices and the average pools as the daemon's rows of the same names.

``max_pool2d_with_indices`` and its backward (PyTorch's indices: Note [Max pool indices] in
kernels/cpu/max_pool.h): ``max_pool2d`` reaches them through PyTorch's
CompositeImplicitAutograd, ``max_pool1d`` through ``max_pool1d_with_indices``'s, and
``max_unpool2d`` decomposes into ops that map (an ``index_put`` at the indices), so
``nn.MaxPool2d(return_indices=True)`` + ``nn.MaxUnpool2d`` and the training path stay on the
daemon. ``adaptive_max_pool2d``/``3d`` and their backward map onto the rows of the same names
(``adaptive_max_pool1d`` reaches the 2-d one through PyTorch's composite);
``max_pool3d_with_indices`` runs as PyTorch's decomposition, whose indices the daemon's
``max_pool3d_with_indices_backward`` takes. ``avg_pool2d``/``3d`` with every form PyTorch
has (ceil_mode, count_include_pad, divisor_override) and ``_adaptive_avg_pool3d``, with their
backward."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from ._aten_map import c, rule, same_name

aten = torch.ops.aten


def _ints(v: Any) -> List[int]:
    return [v] if isinstance(v, int) else list(v)


def _window(kernel_size: Any, stride: Any, padding: Any, dilation: Any,
            ceil_mode: bool) -> Dict[str, Any]:
    return dict(kernel_size=_ints(kernel_size), stride=_ints(stride or []),
                padding=_ints(padding), dilation=_ints(dilation), ceil_mode=bool(ceil_mode))


def _avg_window(kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
                count_include_pad: bool, divisor_override: Any) -> Optional[Dict[str, Any]]:
    """avg_pool2d's/3d's attributes (the rows' divisor_override 0 means none); None for a
    divisor_override of 0, which PyTorch refuses: the CPU fallback raises its error."""
    if divisor_override == 0:
        return None
    return dict(kernel_size=_ints(kernel_size), stride=_ints(stride or []),
                padding=_ints(padding), ceil_mode=bool(ceil_mode),
                count_include_pad=bool(count_include_pad), divisor_override=divisor_override)


@rule(aten.max_pool2d_with_indices.default)
def _max_pool2d_with_indices(self: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
                             dilation: Any = 1, ceil_mode: bool = False) -> Any:
    return tuple(c("max_pool2d_with_indices", [self],
                   **_window(kernel_size, stride, padding, dilation, ceil_mode)))


@rule(aten.max_pool2d_with_indices_backward.default)
def _max_pool2d_with_indices_backward(grad_output: Any, self: Any, kernel_size: Any,
                                      stride: Any, padding: Any, dilation: Any,
                                      ceil_mode: bool, indices: Any) -> Any:
    return c("max_pool2d_with_indices_backward", [grad_output, self, indices],
             **_window(kernel_size, stride, padding, dilation, ceil_mode))


@rule(aten.max_pool3d_with_indices_backward.default)
def _max_pool3d_with_indices_backward(grad_output: Any, self: Any, kernel_size: Any,
                                      stride: Any, padding: Any, dilation: Any,
                                      ceil_mode: bool, indices: Any) -> Any:
    return c("max_pool3d_with_indices_backward", [grad_output, self, indices],
             **_window(kernel_size, stride, padding, dilation, ceil_mode))


@rule(aten.adaptive_max_pool2d.default)
def _adaptive_max_pool2d(self: Any, output_size: Any) -> Any:
    return tuple(c("adaptive_max_pool2d", [self], output_size=_ints(output_size)))


@rule(aten.adaptive_max_pool3d.default)
def _adaptive_max_pool3d(self: Any, output_size: Any) -> Any:
    return tuple(c("adaptive_max_pool3d", [self], output_size=_ints(output_size)))


same_name("adaptive_max_pool2d_backward", aten.adaptive_max_pool2d_backward.default)
same_name("adaptive_max_pool3d_backward", aten.adaptive_max_pool3d_backward.default)


def _avg_rule(name: str) -> Any:
    def forward(self: Any, kernel_size: Any, stride: Any = (), padding: Any = 0,
                ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: Any = None) -> Any:
        attrs = _avg_window(kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)
        return NotImplemented if attrs is None else c(name, [self], **attrs)
    return forward


def _avg_backward_rule(name: str) -> Any:
    def backward(grad_output: Any, self: Any, kernel_size: Any, stride: Any, padding: Any,
                 ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Any:
        attrs = _avg_window(kernel_size, stride, padding, ceil_mode, count_include_pad,
                            divisor_override)
        return NotImplemented if attrs is None else c(name, [grad_output, self], **attrs)
    return backward


rule(aten.avg_pool2d.default)(_avg_rule("avg_pool2d"))
rule(aten.avg_pool3d.default)(_avg_rule("avg_pool3d"))
rule(aten.avg_pool2d_backward.default)(_avg_backward_rule("avg_pool2d_backward"))
rule(aten.avg_pool3d_backward.default)(_avg_backward_rule("avg_pool3d_backward"))


@rule(aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool3d(self: Any, output_size: Any) -> Any:
    return c("adaptive_avg_pool3d", [self], output_size=_ints(output_size))


same_name("adaptive_avg_pool3d_backward", aten._adaptive_avg_pool3d_backward.default)
