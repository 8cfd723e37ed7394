"""The convolutions of ``torch.nn.functional`` beyond ``conv2d``: ``conv1d``,
``conv_transpose1d`` and ``conv_transpose2d``, on the daemon's 2-d ops.

A 1-d convolution is the 2-d one over a unit height: input ``(N, C, L)`` becomes
``(N, C, 1, L)`` and a ``(O, C/g, k)`` weight ``(O, C/g, 1, k)``, with stride, padding and
dilation 1/0/1 along the height. The daemon's autograd sees the unsqueeze and the squeeze, so
gradients reach input, weight and bias unchanged. Unbatched input (no ``N``) gets a unit batch
here, as PyTorch accepts it. Shapes are checked here, before any op is sent, so that an error
names the 1-d op the user called rather than the daemon's 2-d one.
"""

from __future__ import annotations

import operator
from typing import List, Optional, Sequence, Tuple, Union

from .._tensor import Tensor, call

_IntOrSeq = Union[int, Sequence[int]]


def as_ints(v: _IntOrSeq, n: int, name: str, op: str) -> List[int]:
    """``v`` as ``n`` ints (an int is repeated; a 1-sequence too, as PyTorch does)."""
    if isinstance(v, (list, tuple)):
        out = [operator.index(x) for x in v]
        if len(out) == 1:
            out = out * n
        if len(out) != n:
            raise ValueError(f"{op}: {name} must be an int or {n} ints, got {v!r}")
        return out
    return [operator.index(v)] * n


def check_conv_shapes(op: str, nd: int, input: Tensor, weight: Tensor, groups: int,
                      transposed: bool) -> bool:
    """Checks ranks and channels of an ``nd``-d (transposed) convolution; returns whether the
    input is batched (``nd + 2`` dims) rather than unbatched (``nd + 1``)."""
    ishape, wshape = list(input.shape), list(weight.shape)
    if len(ishape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: expected {nd + 1}-d (unbatched) or {nd + 2}-d (batched) "
                           f"input, but got input of shape {ishape}")
    if len(wshape) != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-d weight, but got weight of shape "
                           f"{wshape}")
    if groups < 1:
        raise RuntimeError(f"{op}: groups must be a positive integer, got {groups}")
    channels = ishape[-nd - 1]
    want = wshape[0] if transposed else wshape[1] * groups
    if channels != want:
        raise RuntimeError(f"{op}: input of shape {ishape} has {channels} channels, but weight "
                           f"of shape {wshape} with groups={groups} expects {want}")
    if wshape[0] % groups:
        what = "in_channels" if transposed else "out_channels"
        raise RuntimeError(f"{op}: weight of shape {wshape} has {wshape[0]} {what}, which "
                           f"groups={groups} does not divide")
    return len(ishape) == nd + 2


def same_padding(op: str, input: Tensor, weight: Tensor, stride: List[int],
                 dilation: List[int]) -> Tuple[Tensor, List[int]]:
    """PyTorch's ``padding='same'``: ``dilation * (k - 1)`` zeros per spatial dim, half on
    each side, the odd one on the right (PyTorch pads the input for it, and so do we: the
    daemon's convolutions take symmetric padding only)."""
    if any(s != 1 for s in stride):
        raise ValueError(f"{op}: padding='same' is not supported for strided convolutions")
    nd = len(dilation)
    pads: List[int] = []
    for i, (d, k) in enumerate(zip(dilation, weight.shape[2:])):
        total = d * (k - 1)
        pads.append(total // 2)
        if total % 2:  # one extra zero at the end of spatial dim i
            dim = input.dim() - nd + i
            edge = call("narrow", [input], {"dim": dim, "start": 0, "length": 1})
            input = call("cat", [input, call("zeros_like", [edge])], {"dim": dim})
    return input, pads


def _padding(op: str, padding: Union[str, _IntOrSeq], input: Tensor, weight: Tensor,
             stride: List[int], dilation: List[int]) -> Tuple[Tensor, List[int]]:
    if isinstance(padding, str):
        if padding == "valid":
            return input, [0] * len(dilation)
        if padding == "same":
            return same_padding(op, input, weight, stride, dilation)
        raise ValueError(f"{op}: invalid padding string {padding!r} (use 'valid', 'same' or "
                         "ints)")
    return input, as_ints(padding, len(dilation), "padding", op)


def _maybe_bias(bias: Optional[Tensor]) -> List[Tensor]:
    return [bias] if bias is not None else []


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: _IntOrSeq = 1, padding: Union[str, _IntOrSeq] = 0,
           dilation: _IntOrSeq = 1, groups: int = 1) -> Tensor:
    """1-d convolution of ``(N, C, L)`` (or ``(C, L)``) ``input`` with a ``(O, C/groups, k)``
    ``weight``; ``padding`` may be ints, ``'valid'`` or ``'same'`` (stride 1)."""
    batched = check_conv_shapes("conv1d", 1, input, weight, groups, transposed=False)
    s = as_ints(stride, 1, "stride", "conv1d")
    d = as_ints(dilation, 1, "dilation", "conv1d")
    x = input if batched else call("unsqueeze", [input], {"dim": 0})
    x, p = _padding("conv1d", padding, x, weight, s, d)
    x = call("unsqueeze", [x], {"dim": 2})
    w = call("unsqueeze", [weight], {"dim": 2})
    y = call("conv2d", [x, w] + _maybe_bias(bias), {
        "stride": [1] + s, "padding": [0] + p, "dilation": [1] + d, "groups": groups})
    y = call("squeeze", [y], {"dim": 2})
    return y if batched else call("squeeze", [y], {"dim": 0})


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: _IntOrSeq = 1, padding: _IntOrSeq = 0,
                     output_padding: _IntOrSeq = 0, groups: int = 1,
                     dilation: _IntOrSeq = 1) -> Tensor:
    """2-d transposed convolution ("deconvolution") of ``(N, C, H, W)`` (or ``(C, H, W)``)
    ``input`` with a ``(C, O/groups, kH, kW)`` ``weight``: conv2d's gradient w.r.t. its
    input."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: _IntOrSeq = 1, padding: _IntOrSeq = 0,
                     output_padding: _IntOrSeq = 0, groups: int = 1,
                     dilation: _IntOrSeq = 1) -> Tensor:
    """1-d transposed convolution of ``(N, C, L)`` (or ``(C, L)``) ``input`` with a
    ``(C, O/groups, k)`` ``weight``."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def _conv_transpose(op: str, nd: int, input: Tensor, weight: Tensor, bias: Optional[Tensor],
                    stride: _IntOrSeq, padding: _IntOrSeq, output_padding: _IntOrSeq,
                    groups: int, dilation: _IntOrSeq) -> Tensor:
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be ints (PyTorch's transposed convolutions take "
                         f"no padding strings), got {padding!r}")
    batched = check_conv_shapes(op, nd, input, weight, groups, transposed=True)
    s = as_ints(stride, nd, "stride", op)
    p = as_ints(padding, nd, "padding", op)
    op_ = as_ints(output_padding, nd, "output_padding", op)
    d = as_ints(dilation, nd, "dilation", op)
    for o, si, di in zip(op_, s, d):
        if o >= si and o >= di:
            raise ValueError(f"{op}: output_padding {op_} must be smaller than either stride "
                             f"{s} or dilation {d}")
    x, w = input, weight
    if not batched:
        x = call("unsqueeze", [x], {"dim": 0})
    if nd == 1:  # a unit height; see the module's docstring
        x = call("unsqueeze", [x], {"dim": 2})
        w = call("unsqueeze", [w], {"dim": 2})
        s, p, op_, d = [1] + s, [0] + p, [0] + op_, [1] + d
    y = call("conv_transpose2d", [x, w] + _maybe_bias(bias), {
        "stride": s, "padding": p, "output_padding": op_, "groups": groups, "dilation": d})
    if nd == 1:
        y = call("squeeze", [y], {"dim": 2})
    return y if batched else call("squeeze", [y], {"dim": 0})
