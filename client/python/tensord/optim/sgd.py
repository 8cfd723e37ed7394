"""SGD with momentum, dampening, Nesterov and weight decay: one ``sgd_step`` per group."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Tuple

from .. import _tensor
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

    def _step_from_params(self, group: Dict[str, Any]) -> bool:
        """Without momentum there is no state; with it, only once every parameter has its
        buffer (made at the step that first saw its gradient, as PyTorch makes it)."""
        params = group["params"]
        bufs = []
        if group["momentum"] != 0:
            for p in params:
                buf = self.state[p].get("momentum_buffer") if p in self.state else None
                if buf is None:
                    return False
                bufs.append(buf)
        self._fused("sgd_step", params + bufs, dict(self._attrs(group), n=len(params),
                                                     grads_from_params=True))
        return True

    def _group_step(self, group: Dict[str, Any], pairs: List[Tuple[Tensor, Tensor]]) -> None:
        params = [p for p, _ in pairs]
        grads = [g for _, g in pairs]
        momentum, dampening = group["momentum"], group["dampening"]
        bufs = []
        if momentum != 0:
            for p, g in pairs:
                st = self.state[p]
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf = st["momentum_buffer"] = self._first_buffer(p, g, group)
                bufs.append(buf)
        self._fused("sgd_step", params + grads + bufs, dict(self._attrs(group), n=len(params)))

    @staticmethod
    def _attrs(group: Dict[str, Any]) -> Dict[str, Any]:
        return {"lr": float(group["lr"]), "momentum": float(group["momentum"]),
                "dampening": float(group["dampening"]),
                "weight_decay": float(group["weight_decay"]),
                "nesterov": bool(group["nesterov"]), "maximize": bool(group["maximize"])}

    @staticmethod
    def _first_buffer(p: Tensor, g: Tensor, group: Dict[str, Any]) -> Tensor:
        """The buffer before the first step. PyTorch starts it at the first step's update
        direction ``d`` (no dampening); the fused op computes ``m * buf + (1 - dampening) * d``,
        so a zero buffer matches when dampening is 0, and ``dampening * d / m`` otherwise."""
        if group["dampening"] == 0:
            return _tensor.call("zeros_like", [p])
        d = -g if group["maximize"] else g
        if group["weight_decay"] != 0:
            d = d + p * float(group["weight_decay"])
        return d * (float(group["dampening"]) / float(group["momentum"]))
