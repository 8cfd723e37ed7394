"""3-d convolutions (``aten.convolution`` / ``convolution_backward`` with 5-d input and weight:
conv3d and conv_transpose3d) on the daemon's ``conv3d`` rows (runtime/ops/conv3d_ops.cc).

As in 2-d (``_aten_map_nn``): a transposed conv is ``conv3d_backward_input`` with the same
weight, sized by PyTorch's output shape (which accounts for ``output_padding``); its input
gradient is ``conv3d`` of the output gradient (cut to the input's size: an ``output_padding``
at least the stride makes it larger), its weight gradient ``conv3d_backward_weight`` with the
input in the output gradient's place. The rules registered here replace those of ``_conv1d``
in ``RULES`` (``_aten_table`` imports this module after it) and hand the other calls on to
them.
"""

from __future__ import annotations

from typing import Any

import torch

from . import _conv1d
from ._aten_map import _slice, c, rule
from ._aten_map_nn import torch_args
from ._meta import to_meta

aten = torch.ops.aten


def _geometry(stride: Any, padding: Any, dilation: Any, groups: int) -> dict:
    return dict(stride=list(stride), padding=list(padding), dilation=list(dilation),
                groups=groups)


def _is_3d(input: Any, weight: Any) -> bool:  # noqa: A002
    return input.dim() == 5 and weight.dim() == 5


@rule(aten.convolution.default)
@torch_args
def _convolution(targs: tuple, input: Any, weight: Any, bias: Any, stride: Any,  # noqa: A002
                 padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                 groups: int) -> Any:
    if not _is_3d(targs[0], targs[1]):
        return _conv1d._convolution(targs, input, weight, bias, stride, padding, dilation,
                                    transposed, output_padding, groups)
    geo = _geometry(stride, padding, dilation, groups)
    if not transposed:
        ins = [input, weight] + ([bias] if bias is not None else [])
        return c("conv3d", ins, **geo)
    meta = torch.ops.aten.convolution.default(*[to_meta(t) for t in targs])
    out = c("conv3d_backward_input", [input, weight], input_size=list(meta.shape), **geo)
    if bias is not None:
        out = c("add", [out, c("view", [bias], shape=[1, -1, 1, 1, 1])])
    return out


@rule(aten.convolution_backward.default)
@torch_args
def _convolution_backward(targs: tuple, grad: Any, input: Any, weight: Any,  # noqa: A002
                          bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                          transposed: bool, output_padding: Any, groups: int,
                          output_mask: Any) -> Any:
    if not _is_3d(targs[1], targs[2]):
        return _conv1d._convolution_backward(targs, grad, input, weight, bias_sizes, stride,
                                             padding, dilation, transposed, output_padding,
                                             groups, output_mask)
    geo = _geometry(stride, padding, dilation, groups)
    gi = gw = None
    if not transposed:
        if output_mask[0]:
            gi = c("conv3d_backward_input", [grad, weight], input_size=list(targs[1].shape),
                   **geo)
        if output_mask[1]:
            gw = c("conv3d_backward_weight", [grad, input], weight_size=list(targs[2].shape),
                   **geo)
    else:
        if output_mask[0]:
            gi = c("conv3d", [grad, weight], **geo)
            for d in (2, 3, 4):
                gi = _slice(gi, d, 0, targs[1].shape[d], 1)
            gi = c("contiguous", [gi])
        if output_mask[1]:
            gw = c("conv3d_backward_weight", [input, grad], weight_size=list(targs[2].shape),
                   **geo)
    gb = c("sum", [grad], dim=[0, 2, 3, 4]) if output_mask[2] else None
    return gi, gw, gb
