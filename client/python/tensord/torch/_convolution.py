"""Convolutions on the daemon: ``aten.convolution`` and ``aten.convolution_backward`` for 1-, 2-
and 3-d inputs (conv1d/2d/3d and conv_transpose1d/2d/3d), one rule each, dispatching on the
input's rank.

The daemon has 2-d and 3-d rows (``conv2d``, ``conv3d`` and their ``_backward_input`` and
``_backward_weight``; runtime/ops). Over those:

- A 1-d conv is the 2-d one over a unit height. Input ``(N, C, L)``, weight ``(O, C/g, k)``
  (transposed: ``(C, O/g, k)``) and the output gradient gain a height of 1 at dim 2; stride,
  padding, dilation and output_padding gain 1, 0, 1 and 0 for it. The 2-d path runs on meta
  tensors of the unsqueezed shapes (it reads shapes only), and its daemon results lose the unit
  height again.
- A transposed conv is ``conv{n}d_backward_input`` with the same weight, sized by PyTorch's
  output shape (which accounts for ``output_padding``). Its input gradient is ``conv{n}d`` of
  the output gradient, cut to the input's size (an ``output_padding`` at least the stride makes
  it larger); its weight gradient is ``conv{n}d_backward_weight`` with the input in the output
  gradient's place.
"""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from ._aten_map import _slice, c, rule, torch_args
from ._meta import to_meta

aten = torch.ops.aten


def _spatial_dims(input: Any, weight: Any) -> Optional[int]:  # noqa: A002
    """1, 2 or 3 for a conv the daemon runs (input and weight of one rank, 3 to 5); else None."""
    rank = input.dim()
    return rank - 2 if rank == weight.dim() and 3 <= rank <= 5 else None


def _geometry(stride: Any, padding: Any, dilation: Any, groups: int) -> dict:
    return dict(stride=list(stride), padding=list(padding), dilation=list(dilation),
                groups=groups)


# ---------------------------------------------------------------- 1-d as 2-d over a unit height
def _unit_height(t: Any) -> Any:
    """A meta tensor of ``t``'s shape with a height of 1 at dim 2 (``t``: a torch tensor)."""
    return None if t is None else to_meta(t).unsqueeze(2)


def _unit_height_geometry(stride: Any, padding: Any, dilation: Any,
                          output_padding: Any) -> List[Any]:
    return [[1] + list(stride), [0] + list(padding), [1] + list(dilation),
            [0] + list(output_padding)]


def _up(x: Any) -> Any:
    return c("unsqueeze", [x], dim=2)


def _down(x: Any) -> Any:
    return None if x is None else c("squeeze", [x], dim=2)


# ---------------------------------------------------------------- the 2-d and 3-d rows
def _forward(n: int, targs: tuple, input: Any, weight: Any, bias: Any,  # noqa: A002
             geo: dict, transposed: bool) -> Any:
    if not transposed:
        ins = [input, weight] + ([bias] if bias is not None else [])
        return c(f"conv{n}d", ins, **geo)
    meta = aten.convolution.default(*[to_meta(t) for t in targs])  # t.to("meta") would download
    out = c(f"conv{n}d_backward_input", [input, weight], input_size=list(meta.shape), **geo)
    if bias is not None:
        out = c("add", [out, c("view", [bias], shape=[1, -1] + [1] * n)])
    return out


def _backward(n: int, targs: tuple, grad: Any, input: Any, weight: Any,  # noqa: A002
              geo: dict, transposed: bool, output_mask: Any) -> tuple:
    conv, spatial = f"conv{n}d", list(range(2, 2 + n))
    input_shape, weight_shape = list(targs[1].shape), list(targs[2].shape)
    gi = gw = None
    if output_mask[0]:
        if transposed:
            gi = c(conv, [grad, weight], **geo)
            for d in spatial:
                gi = _slice(gi, d, 0, input_shape[d], 1)
            gi = c("contiguous", [gi])
        else:
            gi = c(f"{conv}_backward_input", [grad, weight], input_size=input_shape, **geo)
    if output_mask[1]:
        pair = [input, grad] if transposed else [grad, input]
        gw = c(f"{conv}_backward_weight", pair, weight_size=weight_shape, **geo)
    gb = c("sum", [grad], dim=[0] + spatial) if output_mask[2] else None
    return gi, gw, gb


# ---------------------------------------------------------------- the rules
@rule(aten.convolution.default)
@torch_args
def _convolution(targs: tuple, input: Any, weight: Any, bias: Any, stride: Any,  # noqa: A002
                 padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                 groups: int) -> Any:
    n = _spatial_dims(targs[0], targs[1])
    if n is None:
        return NotImplemented
    if n > 1:
        return _forward(n, targs, input, weight, bias, _geometry(stride, padding, dilation, groups),
                        transposed)
    s, p, d, op = _unit_height_geometry(stride, padding, dilation, output_padding)
    targs2 = (_unit_height(targs[0]), _unit_height(targs[1]), targs[2], s, p, d, transposed,
              op, groups)
    return _down(_forward(2, targs2, _up(input), _up(weight), bias, _geometry(s, p, d, groups),
                          transposed))


@rule(aten.convolution_backward.default)
@torch_args
def _convolution_backward(targs: tuple, grad: Any, input: Any, weight: Any,  # noqa: A002
                          bias_sizes: Any, stride: Any, padding: Any, dilation: Any,
                          transposed: bool, output_padding: Any, groups: int,
                          output_mask: Any) -> Any:
    n = _spatial_dims(targs[1], targs[2])
    if n is None:
        return NotImplemented
    if n > 1:
        return _backward(n, targs, grad, input, weight,
                         _geometry(stride, padding, dilation, groups), transposed, output_mask)
    s, p, d, _ = _unit_height_geometry(stride, padding, dilation, output_padding)
    targs2 = (_unit_height(targs[0]), _unit_height(targs[1]), _unit_height(targs[2]))
    gi, gw, gb = _backward(2, targs2, _up(grad), _up(input), _up(weight),
                           _geometry(s, p, d, groups), transposed, output_mask)
    return _down(gi), _down(gw), gb
