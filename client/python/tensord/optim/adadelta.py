"""Adadelta, as ``torch.optim.Adadelta`` (single-tensor algorithm), composed from daemon ops
(``composed.py``)."""

from __future__ import annotations

from typing import Any, Dict, Iterable

from .._tensor import Tensor
from .composed import ComposedOptimizer, add_, call, check_non_negative, mul_, zeros_like


class Adadelta(ComposedOptimizer):
    """``v = rho v + (1 - rho) g^2``; ``d = sqrt(u + eps) / sqrt(v + eps) * g``;
    ``u = rho u + (1 - rho) d^2``; ``p -= lr d``; L2 ``weight_decay`` added to ``g``."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0.0, foreach: Any = None, *,
                 maximize: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach))

    def _update(self, p: Tensor, grad: Tensor, state: Dict[str, Any],
                group: Dict[str, Any]) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros_like(p)
            state["acc_delta"] = zeros_like(p)
        state["step"] += 1
        rho, eps = group["rho"], float(group["eps"])
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        square_avg = add_(mul_(state["square_avg"], rho), grad * grad, 1 - rho)
        std = call("sqrt", [square_avg + eps])
        delta = call("sqrt", [state["acc_delta"] + eps]) / std * grad
        add_(mul_(state["acc_delta"], rho), delta * delta, 1 - rho)
        add_(p, delta, -group["lr"])
