"""SGD with momentum, dampening, Nesterov and weight decay: one ``sgd_step`` per group."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from .. import _tensor
from ..autograd import grads_of
from .._tensor import Tensor
from .optimizer import Optimizer, required


class SGD(Optimizer):
    """``torch.optim.SGD``: the same update, run by the daemon's fused ``sgd_step``."""

    def __init__(self, params: Iterable[Any], lr: Any = required, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 *, maximize: bool = False) -> None:
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _group_step(self, group: Dict[str, Any]) -> None:
        params = group["params"]
        bufs: List[Tensor] = []
        if group["momentum"] != 0:
            missing = [p for p in params if self.state[p].get("momentum_buffer") is None]
            if missing:
                self._first_buffers(missing, group)
            params = [p for p in params if self.state[p].get("momentum_buffer") is not None]
            bufs = [self.state[p]["momentum_buffer"] for p in params]
        if params:
            self._fused("sgd_step", params + bufs, dict(self._attrs(group), n=len(params)))

    @staticmethod
    def _attrs(group: Dict[str, Any]) -> Dict[str, Any]:
        return {"lr": float(group["lr"]), "momentum": float(group["momentum"]),
                "dampening": float(group["dampening"]),
                "weight_decay": float(group["weight_decay"]),
                "nesterov": bool(group["nesterov"]), "maximize": bool(group["maximize"])}

    def _first_buffers(self, params: List[Tensor], group: Dict[str, Any]) -> None:
        """The buffers before their first step. PyTorch starts one at the first update
        direction ``d`` (no dampening); the fused op computes ``m * buf + (1 - dampening) * d``,
        so a zero buffer matches when dampening is 0 (made for every parameter, queued), and
        ``dampening * d / m`` otherwise: made only for the parameters that have a gradient,
        which the client must learn first (one wait, at a parameter's first step only)."""
        if group["dampening"] == 0:
            for p in params:
                self.state[p]["momentum_buffer"] = _tensor.call("zeros_like", [p])
            return
        for p, g in zip(params, grads_of(params)):
            if g is None:
                continue
            d = -g if group["maximize"] else g
            if group["weight_decay"] != 0:
                d = d + p * float(group["weight_decay"])
            self.state[p]["momentum_buffer"] = d * (float(group["dampening"])
                                                    / float(group["momentum"]))
