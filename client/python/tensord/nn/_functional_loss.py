"""The losses of ``torch.nn.functional`` added beside the first ones: ``binary_cross_entropy``,
``smooth_l1_loss``, ``huber_loss``, ``multi_margin_loss`` and ``multilabel_margin_loss`` (one
daemon op each) and ``kl_div`` (composed).
Signatures, defaults and the legacy ``size_average``/``reduce`` arguments are PyTorch's."""

from __future__ import annotations

import warnings
from typing import Any, Optional

from .._tensor import Tensor, call


def _reduction(reduction: str, size_average: Any = None, reduce: Any = None) -> str:
    from .functional import _reduction as legacy  # functional imports this module
    return legacy(reduction, size_average, reduce)


def _same_shape(op: str, input: Tensor, target: Tensor) -> None:
    if list(input.shape) != list(target.shape):
        raise ValueError(f"{op}: target of shape {list(target.shape)} differs from input of "
                         f"shape {list(input.shape)}; please ensure they have the same size")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """``-w (t log x + (1 - t) log(1 - x))`` of probabilities ``x`` (logs floored at -100, as
    PyTorch does); ``weight`` broadcasts over the input."""
    r = _reduction(reduction, size_average, reduce)
    _same_shape("binary_cross_entropy", input, target)
    ins = [input, target]
    if weight is not None:
        ins.append(call("expand", [weight], {"size": list(input.shape)}))
    return call("binary_cross_entropy", ins, {"reduction": r})


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None,
                   reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input -
    target``); ``beta=0`` is the L1 loss."""
    r = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got "
                           f"{beta}")
    return call("smooth_l1_loss", [input, target], {"reduction": r, "beta": float(beta)})


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",
               delta: float = 1.0) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    r = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got "
                           f"{delta}")
    return call("huber_loss", [input, target], {"reduction": r, "delta": float(delta)})


def kl_div(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise ``target * (log(target) - input)`` for log-probabilities ``input`` (0 where
    the target is 0), or ``exp(target) * (target - input)`` with ``log_target``.
    ``reduction='batchmean'`` divides the sum by the batch size (the KL divergence proper);
    ``'mean'`` divides by the element count, as PyTorch does (with its warning)."""
    if reduction == "batchmean":
        if size_average is not None or reduce is not None:
            r = _reduction("mean", size_average, reduce)
        else:
            r = "batchmean"
    else:
        r = _reduction(reduction, size_average, reduce)
        if r == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size "
                          "and the support size. 'batchmean' divides only by the batch size, "
                          "and aligns with the KL div math definition.", UserWarning,
                          stacklevel=2)
    if log_target:
        loss = call("exp", [target]) * (target - input)
    else:
        # xlogy(t, t): the log of a 1 where t is 0, so neither value nor gradient is NaN there.
        positive = call("gt", [target, 0.0])
        safe = call("where", [positive, target, call("ones_like", [target])])
        loss = target * call("log", [safe]) - target * input
    if r == "none":
        return loss
    if r == "batchmean":
        total = call("sum", [loss])
        return total / input.shape[0] if input.dim() else total
    return call(r, [loss])


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Optional[Tensor] = None, size_average: Any = None,
                      reduce: Any = None, reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: per row, the sum over classes ``i != y`` of
    ``w[y] max(0, margin - x[y] + x[i])^p / C`` (``p`` 1 or 2), then reduced."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    ins = [input, target] + ([] if weight is None else [weight])
    return call("multi_margin_loss", ins, {"p": float(p), "margin": float(margin),
                                           "reduction": _reduction(reduction, size_average,
                                                                   reduce)})


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Any = None,
                           reduce: Any = None, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: ``target`` lists each row's classes up to the first -1; per
    row, the sum over its classes ``j`` and the other classes ``i`` of
    ``max(0, 1 - x[j] + x[i]) / C``, then reduced."""
    return call("multilabel_margin_loss_forward", [input, target],
                {"reduction": _reduction(reduction, size_average, reduce)})[0]
