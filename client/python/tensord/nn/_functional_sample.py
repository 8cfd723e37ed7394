"""``ctc_loss`` and ``grid_sample`` of volumes as ``torch.nn.functional``'s, each one daemon op
whose backward the daemon's autograd runs: ``_ctc_loss`` (runtime/ops/ctc_loss_ops.cc, the
reduction composed here as PyTorch's ``ctc_loss`` does) and ``grid_sampler_3d``
(runtime/ops/grid_sample_3d_ops.cc). ``grid_sample`` of 4-d images is not served yet: the
daemon has their backward only (the PyTorch device decomposes their forward)."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from .._tensor import Tensor, call

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
_Lengths = Union[Tensor, Sequence[int]]


def _lengths(v: _Lengths, like: Tensor) -> Tensor:
    """Lengths as an int64 tensor on ``like``'s device (a list is uploaded)."""
    if isinstance(v, Tensor):
        return v if v.dtype.name == "int64" else call("to", [v], {"dtype": "int64"})
    from .. import _ops  # the package's creation ops (imported late: they import nn)
    return _ops.tensor(np.asarray(list(v), dtype=np.int64), device=like.device)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: _Lengths,
             target_lengths: _Lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """The connectionist temporal classification loss of ``log_probs`` ``(T, N, C)`` (or
    ``(T, C)`` unbatched) against ``targets`` (``(N, S)`` padded or concatenated 1-d), as
    PyTorch's: ``mean`` divides each loss by its target length before averaging;
    ``zero_infinity`` zeroes infinite losses and their gradients."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = call("unsqueeze", [log_probs], {"dim": 1})
        if targets.dim() == 1:
            targets = call("unsqueeze", [targets], {"dim": 0})
    if isinstance(target_lengths, Tensor):
        widest = int(targets.shape[-1])  # no wait for the values (Note [CTC log_alpha width])
    else:
        target_lengths = [int(x) for x in (target_lengths if not isinstance(target_lengths, int)
                                           else [target_lengths])]
        widest = max(target_lengths, default=0)
    if isinstance(input_lengths, int):
        input_lengths = [input_lengths]
    il, tl = _lengths(input_lengths, targets), _lengths(target_lengths, targets)
    nll = call("_ctc_loss", [log_probs, targets, il, tl],
               {"blank": int(blank), "zero_infinity": bool(zero_infinity),
                "max_target_length": widest})[0]
    if zero_infinity:
        inf = call("eq", [nll, float("inf")])
        nll = call("where", [inf, call("zeros_like", [nll]), nll])
    if reduction == "mean":
        per = nll / call("clamp", [call("to", [tl], {"dtype": nll.dtype.name})], {"min": 1.0})
        return per.mean()
    if reduction == "sum":
        return nll.sum()
    return call("squeeze", [nll], {"dim": 0}) if unbatched else nll


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: Optional[bool] = None) -> Tensor:
    """Values of the volume ``input`` ``(N, C, D, H, W)`` at ``grid`` ``(N, Do, Ho, Wo, 3)``
    (x, y, z in [-1, 1]): trilinear (``bilinear``) or ``nearest``, ``zeros``/``border``/
    ``reflection`` padding; ``align_corners`` defaults to False, as PyTorch's."""
    if mode not in _MODES or padding_mode not in _PADDINGS:
        raise ValueError(f"grid_sample: unknown mode {mode!r} or padding_mode "
                         f"{padding_mode!r}")
    if input.dim() != 5:
        raise NotImplementedError("grid_sample: the daemon serves 5-d volumes (grid_sampler_3d) "
                                  f"only, got a {input.dim()}-d input")
    if mode == "bicubic":
        raise ValueError("grid_sample: bicubic interpolation only supports 4D input")
    return call("grid_sampler_3d", [input, grid],
                {"interpolation_mode": _MODES[mode], "padding_mode": _PADDINGS[padding_mode],
                 "align_corners": bool(align_corners)})
