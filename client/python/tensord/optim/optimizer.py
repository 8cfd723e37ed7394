"""``Optimizer``: param groups, state, ``zero_grad``, ``state_dict``, as ``torch.optim``.

A step is one fused daemon op per parameter group (``sgd_step``, ``adam_step``: in place over
lists of parameters and state tensors), so its cost does not grow with the number of parameters
in round trips or commands, and it never waits for the daemon: the daemon reads each
parameter's ``.grad`` itself and skips those without one, as PyTorch does (Note [Optimizer
steps read .grad], runtime/ops/optim_step.h). State tensors (momentum buffers, Adam's moments
and step counts) are created by the client, queued, at a parameter's first step, and live in the
daemon; so a parameter that has had no gradient yet may hold zero state where PyTorch holds
none (the same update follows). ``zero_grad`` is queued too (``set_to_none=False`` zeroes the
gradients that exist on the daemon: ``zero_grads``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Dict, Iterable, List, Optional

from .. import _dtype, _grad, _ops, _tensor
from ..autograd import zero_grads
from .._tensor import Tensor
from ..nn.module import value_like


def step_count(value: float = 0.0) -> Tensor:
    """A step count as torch.optim keeps it (``state["step"]``: a float32 CPU scalar), made on
    the daemon, queued; ``adam_step`` counts it (Note [Adam step counts])."""
    return _ops.full((), value, dtype=_dtype.float32, device="cpu")


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with ``"params"`` and hyper-parameters) and
    ``state`` (per-parameter dicts of daemon tensors)."""

    def __init__(self, params: Iterable[Any], defaults: Dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: Dict[Tensor, Dict[str, Any]] = defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize tensord Tensors, got "
                                f"{type(p).__name__}")
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears every parameter's gradient (None by default: queued, no wait)."""
        zero_grads([p for g in self.param_groups for p in g["params"]], set_to_none)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One optimisation step (one daemon command per group). ``closure`` re-evaluates the
        loss, as in PyTorch, and its value is returned."""
        loss = None
        if closure is not None:
            with _grad.enable_grad():
                loss = closure()
        with _grad.no_grad():
            for group in self.param_groups:
                if group["params"]:
                    self._group_step(group)
        return loss

    def _group_step(self, group: Dict[str, Any]) -> None:
        """Queues the group's step (its state made first where missing)."""
        raise NotImplementedError

    @staticmethod
    def _fused(name: str, tensors: List[Tensor], attrs: Dict[str, Any]) -> None:
        _tensor.call(name, tensors, attrs, num_outputs=0,
                     why="fused optimizer steps come with the daemon's autograd")

    # ------------------------------------------------------------------ state

    def state_dict(self) -> Dict[str, Any]:
        """``{"state": {index: {name: value}}, "param_groups": [...]}`` with parameters as
        indices, as PyTorch; state tensors are the daemon tensors themselves (``tensord.save``
        downloads them)."""
        index: Dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index and s}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores hyper-parameters and state; tensors (tensord, NumPy, CPU torch) are
        uploaded or copied next to their parameters."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        by_index: Dict[int, Tensor] = {}
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
            for p, i in zip(mine["params"], theirs["params"]):
                by_index[int(i)] = p
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v
        self.state = defaultdict(dict)
        with _grad.no_grad():
            for i, s in state_dict["state"].items():
                p = by_index[int(i)]
                self.state[p] = {k: self._load_value(k, p, v) for k, v in s.items()}

    @staticmethod
    def _load_value(key: str, p: Tensor, v: Any) -> Any:
        if key == "step":  # Note [Adam step counts]: a CPU scalar the daemon counts in
            return step_count(float(v.item()) if hasattr(v, "item") else float(v))
        if isinstance(v, Tensor):
            return _tensor.call("clone", [v])
        if hasattr(v, "shape"):
            return value_like(p, v)
        return v

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)
