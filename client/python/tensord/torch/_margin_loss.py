"""The multi-class margin losses' backward ops as the daemon's rows of the same names
(runtime/ops/margin_loss_ops.cc): ``multi_margin_loss_backward`` (p 1 or 2, margin, class
weights) and ``multilabel_margin_loss_backward``. Their forwards run as PyTorch's
decompositions on the device's ops; with these, ``F.multi_margin_loss`` and
``F.multilabel_margin_loss`` train on the daemon. PyTorch has no meta function for either
backward: the gradient has ``self``'s shape and dtype (``_meta.META_FNS``)."""

from __future__ import annotations

from typing import Any

import torch

from . import _meta
from ._aten_map import c, rule
from ._aten_map_nn import _REDUCTIONS

aten = torch.ops.aten


def _like_self(grad_output: Any, self: Any, *args: Any, **kwargs: Any) -> Any:
    return torch.empty_like(self)


_meta.META_FNS[aten.multi_margin_loss_backward.default] = _like_self
_meta.META_FNS[aten.multilabel_margin_loss_backward.default] = _like_self


@rule(aten.multi_margin_loss_backward.default)
def _multi_margin_loss_backward(grad_output: Any, self: Any, target: Any, p: Any, margin: Any,
                                weight: Any = None, reduction: int = 1) -> Any:
    if target.dtype.name != "int64" or p not in (1, 2):
        return NotImplemented  # the CPU fallback raises PyTorch's error or computes
    ins = [grad_output, self, target] + ([] if weight is None else [weight])
    return c("multi_margin_loss_backward", ins, p=float(p), margin=float(margin),
             reduction=_REDUCTIONS[reduction])


@rule(aten.multilabel_margin_loss_backward.default)
def _multilabel_margin_loss_backward(grad_output: Any, self: Any, target: Any, reduction: int,
                                     is_target: Any) -> Any:
    if target.dtype.name != "int64":
        return NotImplemented
    return c("multilabel_margin_loss_backward", [grad_output, self, target, is_target],
             reduction=_REDUCTIONS[reduction])
