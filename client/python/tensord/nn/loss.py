"""Loss modules, as in ``torch.nn``: thin holders of the functional losses' options."""

from __future__ import annotations

from typing import Any, Optional

from .._tensor import Tensor
from . import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        F._reduction(reduction)
        self.reduction = reduction


class MSELoss(_Loss):
    """Mean squared error (``reduction``: ``'mean'``, ``'sum'`` or ``'none'``)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    """Negative log likelihood of class targets given log-probabilities."""

    def __init__(self, weight: Optional[Tensor] = None, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.ignore_index = ignore_index
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross entropy of logits ``[N, C, ...]`` and class indices or probabilities."""

    def __init__(self, weight: Optional[Tensor] = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (numerically stable form)."""

    def __init__(self, weight: Optional[Tensor] = None, reduction: str = "mean",
                 pos_weight: Optional[Tensor] = None) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities (``weight`` rescales each element)."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__(F._reduction(reduction, size_average, reduce))
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (``beta=0``: L1)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(F._reduction(reduction, size_average, reduce))
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, ``delta``-scaled linear above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(Module):
    """KL divergence of log-probability input from target (``reduction`` also
    ``'batchmean'``; ``log_target``: the target is given as log-probabilities)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F._reduction(reduction, size_average, reduce)
        elif reduction != "batchmean":
            F._reduction(reduction)
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
