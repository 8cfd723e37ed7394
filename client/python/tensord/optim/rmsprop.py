"""RMSprop, as ``torch.optim.RMSprop`` (single-tensor algorithm), composed from daemon ops
(``composed.py``)."""

from __future__ import annotations

from typing import Any, Dict, Iterable

from .._tensor import Tensor
from .composed import ComposedOptimizer, add_, call, check_non_negative, mul_, zeros_like


class RMSprop(ComposedOptimizer):
    """``v = alpha v + (1 - alpha) g^2``; ``p -= lr g / (sqrt(v - g_avg^2 if centered) + eps)``,
    through a momentum buffer when ``momentum > 0``; L2 ``weight_decay`` added to ``g``."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_non_negative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay,
                           alpha=alpha)
        if differentiable:
            raise NotImplementedError("not supported yet: RMSprop(differentiable=True) (use "
                                      "the default, differentiable=False)")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=False))

    def _update(self, p: Tensor, grad: Tensor, state: Dict[str, Any],
                group: Dict[str, Any]) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        state["step"] += 1
        alpha, wd = group["alpha"], group["weight_decay"]
        if wd != 0:
            grad = grad.add(p, alpha=wd)
        square_avg = add_(mul_(state["square_avg"], alpha), grad * grad, 1 - alpha)
        if group["centered"]:
            grad_avg = add_(mul_(state["grad_avg"], alpha), grad, 1 - alpha)
            avg = call("sqrt", [square_avg - grad_avg * grad_avg])
        else:
            avg = call("sqrt", [square_avg])
        avg = add_(avg, float(group["eps"]))
        if group["momentum"] > 0:
            buf = add_(mul_(state["momentum_buffer"], group["momentum"]), grad / avg)
            add_(p, buf, -group["lr"])
        else:
            add_(p, grad / avg, -group["lr"])
