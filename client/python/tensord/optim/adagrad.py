"""Adagrad, as ``torch.optim.Adagrad`` (single-tensor algorithm, dense gradients), composed
from daemon ops (``composed.py``)."""

from __future__ import annotations

from typing import Any, Dict, Iterable

from .. import _grad
from .._tensor import Tensor
from .composed import ComposedOptimizer, add_, call, check_non_negative


class Adagrad(ComposedOptimizer):
    """``sum += g^2``; ``p -= lr / (1 + (step - 1) lr_decay) * g / (sqrt(sum) + eps)``; L2
    ``weight_decay`` added to ``g``. State is made for every parameter at construction, as
    PyTorch does: ``sum`` filled with the constructor's ``initial_accumulator_value`` (a
    group's own value is kept in the group but, as in PyTorch, not used)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: Any = None, *, maximize: bool = False) -> None:
        check_non_negative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize))
        with _grad.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    self.state[p]["step"] = 0.0
                    self.state[p]["sum"] = call("full_like", [p], {
                        "fill_value": float(initial_accumulator_value)})

    def _update(self, p: Tensor, grad: Tensor, state: Dict[str, Any],
                group: Dict[str, Any]) -> None:
        if not state:  # a parameter of a group added after construction
            state["step"] = 0.0
            state["sum"] = call("full_like", [p], {
                "fill_value": float(self.defaults["initial_accumulator_value"])})
        state["step"] += 1
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state_sum = add_(state["sum"], grad * grad)
        std = add_(call("sqrt", [state_sum]), float(group["eps"]))
        add_(p, grad / std, -clr)
