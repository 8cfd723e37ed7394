"""``max_pool2d_with_indices`` and its backward as the daemon's rows of the same names (PyTorch's
indices: Note [Max pool indices] in kernels/cpu/max_pool.h). ``max_pool2d`` reaches them through
PyTorch's CompositeImplicitAutograd, ``max_pool1d`` through ``max_pool1d_with_indices``'s, and
``max_unpool2d`` decomposes into ops that map (an ``index_put`` at the indices), so
``nn.MaxPool2d(return_indices=True)`` + ``nn.MaxUnpool2d`` and the training path stay on the
daemon. ``adaptive_max_pool2d``/``3d`` and their backward map onto the rows of the same names
(``adaptive_max_pool1d`` reaches the 2-d one through PyTorch's composite), and
``max_pool3d_with_indices_backward`` onto its row: ``max_pool3d_with_indices`` itself runs as
PyTorch's decomposition, whose indices the row takes."""

from __future__ import annotations

from typing import Any, Dict, List

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


def _ints(v: Any) -> List[int]:
    return [v] if isinstance(v, int) else list(v)


def _window(kernel_size: Any, stride: Any, padding: Any, dilation: Any,
            ceil_mode: bool) -> Dict[str, Any]:
    return dict(kernel_size=_ints(kernel_size), stride=_ints(stride or []),
                padding=_ints(padding), dilation=_ints(dilation), ceil_mode=bool(ceil_mode))


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


@rule(aten.adaptive_max_pool2d.default)
def _adaptive_max_pool2d(self: Any, output_size: Any) -> Any:
    return tuple(c("adaptive_max_pool2d", [self], output_size=_ints(output_size)))


@rule(aten.adaptive_max_pool3d.default)
def _adaptive_max_pool3d(self: Any, output_size: Any) -> Any:
    return tuple(c("adaptive_max_pool3d", [self], output_size=_ints(output_size)))


@rule(aten.adaptive_max_pool2d_backward.default)
def _adaptive_max_pool2d_backward(grad_output: Any, self: Any, indices: Any) -> Any:
    return c("adaptive_max_pool2d_backward", [grad_output, self, indices])


@rule(aten.adaptive_max_pool3d_backward.default)
def _adaptive_max_pool3d_backward(grad_output: Any, self: Any, indices: Any) -> Any:
    return c("adaptive_max_pool3d_backward", [grad_output, self, indices])


@rule(aten.max_pool3d_with_indices_backward.default)
def _max_pool3d_with_indices_backward(grad_output: Any, self: Any, kernel_size: Any,
                                      stride: Any, padding: Any, dilation: Any,
                                      ceil_mode: bool, indices: Any) -> Any:
    return c("max_pool3d_with_indices_backward", [grad_output, self, indices],
             **_window(kernel_size, stride, padding, dilation, ceil_mode))
