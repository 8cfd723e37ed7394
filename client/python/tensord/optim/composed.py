"""``ComposedOptimizer``: the base of the optimizers the daemon has no fused step for
(``RMSprop``, ``Adagrad``, ``Adadelta``). Each parameter's update is a few daemon ops, in the
order of torch.optim's single-tensor (``foreach=False``) algorithm, so values agree with
PyTorch's to float rounding.

Unlike the fused steps, which read ``.grad`` on the daemon (Note [Optimizer steps read .grad]),
a composed update must be sent only for the parameters that have a gradient (an op on a None
``.grad`` fails): so ``step()`` asks for every parameter's ``.grad`` in one batch and waits for
that one answer (one round trip per step, not per parameter), then queues the updates.
Step counts are Python numbers kept by the client, as torch.optim keeps them for these
optimizers (Adagrad's is a tensor in PyTorch; ``load_state_dict`` accepts either).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .. import _grad, _tensor
from .._tensor import Tensor
from ..autograd import grads_of
from .optimizer import Optimizer

call = _tensor.call


def check_non_negative(**values: float) -> None:
    """torch.optim's argument checks: ``Invalid <name> value: <v>`` (learning rate spelled
    out), raised as ValueError."""
    for name, v in values.items():
        if not 0.0 <= v:
            what = "learning rate" if name == "lr" else ("epsilon value" if name == "eps"
                                                         else f"{name} value")
            raise ValueError(f"Invalid {what}: {v}")


def add_(t: Tensor, other: Any, alpha: float = 1.0) -> Tensor:
    """``t += alpha * other`` in place (the daemon's ``add_``)."""
    return call("add_", [t, other], {"alpha": None if alpha == 1 else float(alpha)})


def mul_(t: Tensor, factor: float) -> Tensor:
    """``t *= factor`` in place."""
    return call("mul_", [t, float(factor)])


def zeros_like(p: Tensor) -> Tensor:
    return call("zeros_like", [p])


class ComposedOptimizer(Optimizer):
    """``step`` learns which parameters have a gradient (one wait), then calls ``_update``
    for each of them, in group order, as torch.optim does."""

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = None
        if closure is not None:
            with _grad.enable_grad():
                loss = closure()
        with _grad.no_grad():
            params = [p for g in self.param_groups for p in g["params"]]
            grads = dict(zip(map(id, params), grads_of(params))) if params else {}
            for group in self.param_groups:
                for p in group["params"]:
                    g = grads[id(p)]
                    if g is not None:
                        self._update(p, -g if group["maximize"] else g, self.state[p], group)
        return loss

    def _update(self, p: Tensor, grad: Tensor, state: Dict[str, Any],
                group: Dict[str, Any]) -> None:
        """Queues one parameter's update (``grad`` already negated under ``maximize``),
        making its state at its first step."""
        raise NotImplementedError

    @staticmethod
    def _load_value(key: str, p: Tensor, v: Any) -> Any:
        if key == "step":  # a client-side count here (torch: a number or a 0-d tensor)
            return float(v.item()) if hasattr(v, "item") else v
        return Optimizer._load_value(key, p, v)
