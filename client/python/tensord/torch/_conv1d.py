"""1-d convolutions (``aten.convolution`` / ``convolution_backward`` with 3-d input and weight:
conv1d and conv_transpose1d) as the 2-d ones over a unit height.

Input ``(N, C, L)``, weight ``(O, C/g, k)`` (transposed: ``(C, O/g, k)``) and the output
gradient gain a height of 1 at dim 2; stride, padding, dilation and output_padding gain 1, 0, 1
and 0 for it. The 2-d rules of ``_aten_map_nn`` then run unchanged on meta tensors of the
unsqueezed shapes (they read shapes only), and their daemon results lose the unit height
again. The rules registered here replace the 2-d ones in ``RULES`` (``_aten_map`` imports
this module after ``_aten_map_nn``) and hand the other calls on to them.
"""

from __future__ import annotations

from typing import Any, List

import torch

from ._aten_map import c, rule
from ._aten_map_nn import _convolution_any, _convolution_backward_any, torch_args
from ._meta import to_meta

aten = torch.ops.aten


def _unit_height(t: Any) -> Any:
    """A meta tensor of ``t``'s shape with a height of 1 at dim 2 (``t``: a torch tensor)."""
    return None if t is None else to_meta(t).unsqueeze(2)


def _geometry(stride: Any, padding: Any, dilation: Any, output_padding: Any) -> List[Any]:
    return [[1] + list(stride), [0] + list(padding), [1] + list(dilation),
            [0] + list(output_padding)]


def _up(x: Any) -> Any:
    return c("unsqueeze", [x], dim=2)


def _down(x: Any) -> Any:
    return None if x is None else c("squeeze", [x], dim=2)


def _is_1d(input: Any, weight: Any) -> bool:  # noqa: A002
    return input.dim() == 3 and weight.dim() == 3


@rule(aten.convolution.default)
@torch_args
def _convolution(targs: tuple, input: Any, weight: Any, bias: Any, stride: Any,  # noqa: A002
                 padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                 groups: int) -> Any:
    if not _is_1d(targs[0], targs[1]):
        return _convolution_any(targs, input, weight, bias, stride, padding, dilation,
                                transposed, output_padding, groups)
    s, p, d, op = _geometry(stride, padding, dilation, output_padding)
    targs2 = (_unit_height(targs[0]), _unit_height(targs[1]), targs[2], s, p, d, transposed,
              op, groups)
    out = _convolution_any(targs2, _up(input), _up(weight), bias, s, p, d, transposed, op,
                           groups)
    return out if out is NotImplemented else _down(out)


@rule(aten.convolution_backward.default)
@torch_args
def _convolution_backward(targs: tuple, grad: Any, input: Any, weight: Any,  # noqa: A002
                          bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                          transposed: bool, output_padding: Any, groups: int,
                          output_mask: Any) -> Any:
    if not _is_1d(targs[1], targs[2]):
        return _convolution_backward_any(targs, grad, input, weight, bias_sizes, stride,
                                         padding, dilation, transposed, output_padding, groups,
                                         output_mask)
    s, p, d, op = _geometry(stride, padding, dilation, output_padding)
    targs2 = (_unit_height(targs[0]), _unit_height(targs[1]), _unit_height(targs[2]),
              bias_sizes, s, p, d, transposed, op, groups, output_mask)
    out = _convolution_backward_any(targs2, _up(grad), _up(input), _up(weight), bias_sizes, s,
                                    p, d, transposed, op, groups, output_mask)
    if out is NotImplemented:
        return out
    gi, gw, gb = out
    return _down(gi), _down(gw), gb

