"""Adam and AdamW: one ``adam_step`` per group, queued (the daemon reads the gradients and
counts each parameter's steps: Note [Adam step counts] in runtime/ops/adam_step_ops.cc)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Tuple

from .. import _tensor
from .optimizer import Optimizer, step_count


class Adam(Optimizer):
    """``torch.optim.Adam``: the same update (bias-corrected moments, L2 weight decay added
    to the gradient), run by the daemon's fused ``adam_step``."""

    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if amsgrad:
            raise NotImplementedError("amsgrad is not supported by the daemon's adam_step")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=False,
                                      maximize=maximize))

    def _group_step(self, group: Dict[str, Any]) -> None:
        # Step counts are per parameter (one that had no grad does not step) and live in the
        # daemon, which alone knows which parameters have a gradient.
        params = group["params"]
        for p in params:
            st = self.state[p]
            if "step" not in st:
                st["step"] = step_count()
                st["exp_avg"] = _tensor.call("zeros_like", [p])
                st["exp_avg_sq"] = _tensor.call("zeros_like", [p])
        states = [self.state[p] for p in params]
        ins = (params + [st["exp_avg"] for st in states] + [st["exp_avg_sq"] for st in states]
               + [st["step"] for st in states])
        beta1, beta2 = group["betas"]
        self._fused("adam_step", ins, {
            "n": len(params), "lr": float(group["lr"]), "beta1": float(beta1),
            "beta2": float(beta2), "eps": float(group["eps"]),
            "weight_decay": float(group["weight_decay"]),
            "decoupled_weight_decay": self._decoupled, "maximize": bool(group["maximize"])})


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay (``p *= 1 - lr * wd``);
    ``weight_decay`` defaults to 1e-2."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
