"""``OneCycleLR``, as ``torch.optim.lr_scheduler.OneCycleLR`` (PyTorch 1.13): the 1cycle
policy, annealing the lr up to ``max_lr`` and down to ``max_lr / div_factor /
final_div_factor`` (and the momentum, or Adam's ``betas[0]``, the other way)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Union

from ._scheduler import LRScheduler
from .optimizer import Optimizer

_Floats = Union[float, Sequence[float]]


def _annealing_cos(start: float, end: float, pct: float) -> float:
    """Cosine anneal from ``start`` to ``end`` as ``pct`` goes from 0.0 to 1.0."""
    cos_out = math.cos(math.pi * pct) + 1
    return end + (start - end) / 2.0 * cos_out


def _annealing_linear(start: float, end: float, pct: float) -> float:
    """Linear anneal from ``start`` to ``end`` as ``pct`` goes from 0.0 to 1.0."""
    return (end - start) * pct + start


def _phases(pct_start: float, total_steps: int, three_phase: bool) -> List[Dict[str, Any]]:
    def phase(end_step: float, lr: str, lr_end: str, m: str, m_end: str) -> Dict[str, Any]:
        return {"end_step": end_step, "start_lr": lr, "end_lr": lr_end, "start_momentum": m,
                "end_momentum": m_end}
    up = phase(float(pct_start * total_steps) - 1, "initial_lr", "max_lr", "max_momentum",
               "base_momentum")
    if not three_phase:
        return [up, phase(total_steps - 1, "max_lr", "min_lr", "base_momentum",
                          "max_momentum")]
    return [up, phase(float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr",
                      "base_momentum", "max_momentum"),
            phase(total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]


class OneCycleLR(LRScheduler):
    """Steps ``total_steps`` (or ``epochs * steps_per_epoch``) times, once per batch."""

    def __init__(self, optimizer: Optimizer, max_lr: _Floats, total_steps: Optional[int] = None,
                 epochs: Optional[int] = None, steps_per_epoch: Optional[int] = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum: _Floats = 0.85,
                 max_momentum: _Floats = 0.95, div_factor: float = 25.,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = self._total(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(pct_start, self.total_steps, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        # the name, not the function, so that state_dict() holds plain data
        self.anneal_strategy = anneal_strategy
        groups = optimizer.param_groups
        if last_epoch == -1:
            for group, lr in zip(groups, self._format_param("max_lr", max_lr)):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum with `cycle_momentum` option "
                                 "enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            maxes = self._format_param("max_momentum", max_momentum)
            bases = self._format_param("base_momentum", base_momentum)
            if last_epoch == -1:
                for m, b, group in zip(maxes, bases, groups):
                    self._set_momentum(group, m)
                    group["max_momentum"], group["base_momentum"] = m, b
        super().__init__(optimizer, last_epoch, verbose)

    @staticmethod
    def _total(total_steps: Optional[int], epochs: Optional[int],
               steps_per_epoch: Optional[int]) -> int:
        if total_steps is None and epochs is None and steps_per_epoch is None:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got "
                                 f"{total_steps}")
            return total_steps
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                             f"{steps_per_epoch}")
        return epochs * steps_per_epoch

    def _format_param(self, name: str, param: _Floats) -> List[float]:
        n = len(self.optimizer.param_groups)
        if isinstance(param, (list, tuple)):
            if len(param) != n:
                raise ValueError(f"expected {n} values for {name}, got {len(param)}")
            return list(param)
        return [param] * n

    def _set_momentum(self, group: Dict[str, Any], momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def get_lr(self) -> List[float]:
        self._warn_outside_step()
        anneal = _annealing_cos if self.anneal_strategy == "cos" else _annealing_linear
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num + 1} times. The specified number of "
                             f"total steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, anneal(group[phase["start_momentum"]],
                                                         group[phase["end_momentum"]], pct))
                    break
                start_step = phase["end_step"]
        return lrs
