"""Learning-rate schedules, as ``torch.optim.lr_scheduler`` (PyTorch 1.13's): ``StepLR``,
``MultiStepLR``, ``LambdaLR``, ``CosineAnnealingLR``, ``LinearLR``, ``OneCycleLR``.

They only rewrite ``optimizer.param_groups[i]["lr"]`` (and OneCycleLR's momentum or
``betas[0]``), plain Python numbers that the next ``step()`` sends to the daemon, so nothing
here talks to the daemon. ``step()`` uses PyTorch's chained form (each lr computed from the
group's current one) and ``step(epoch)`` its closed form, in PyTorch's float operations and
order, so the sequences are PyTorch's to the last bit.
"""

from __future__ import annotations

import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from functools import wraps
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "LambdaLR", "CosineAnnealingLR",
           "LinearLR", "OneCycleLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose.")


def _count_steps(optimizer: Optimizer) -> None:
    """Wraps ``optimizer.step`` to count its calls (``optimizer._step_count``), which lets
    ``LRScheduler.step`` warn when it is called first, as PyTorch does. A weak reference, so
    the optimizer and its wrapper form no cycle."""
    method = optimizer.step
    if getattr(method, "_with_counter", False):
        return
    ref = weakref.ref(optimizer)
    func = type(optimizer).step

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opt = ref()
        opt._step_count += 1  # type: ignore[union-attr]
        return func(opt, *args, **kwargs)

    wrapper._with_counter = True  # type: ignore[attr-defined]
    optimizer.step = wrapper  # type: ignore[method-assign]


class LRScheduler:
    """Base class: ``base_lrs`` (each group's ``initial_lr``), ``last_epoch``, ``step()``,
    ``get_last_lr()``, ``state_dict()`` (everything but the optimizer)."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _count_steps(optimizer)
        self.verbose = verbose
        self.optimizer._step_count = 0  # type: ignore[attr-defined]
        self._step_count = 0
        self._get_lr_called_within_step = False
        self.step()

    def state_dict(self) -> Dict[str, Any]:
        """The scheduler's attributes, less the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores what ``state_dict`` returned."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> List[float]:
        """The learning rates the last ``step()`` set, one per group."""
        return self._last_lr

    def get_lr(self) -> List[float]:
        """The chained form: the next lrs from the groups' current ones."""
        raise NotImplementedError

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning)

    def print_lr(self, is_verbose: bool, group: int, lr: float,
                 epoch: Optional[Union[int, float]] = None) -> None:
        """Prints the new lr of a group when ``verbose``."""
        if not is_verbose:
            return
        if epoch is None:
            print(f"Adjusting learning rate of group {group} to {lr:.4e}.")
        else:
            e = ("%.2f" if isinstance(epoch, float) else "%.5d") % epoch
            print(f"Epoch {e}: adjusting learning rate of group {group} to {lr:.4e}.")

    def step(self, epoch: Optional[Union[int, float]] = None) -> None:
        """Advances the schedule one step (or, deprecated, to ``epoch``: the closed form)."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_with_counter"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning "
                              "rate scheduler initialization. Please, make sure to call "
                              "`optimizer.step()` before `lr_scheduler.step()`.", UserWarning)
            elif self.optimizer._step_count < 1:  # type: ignore[attr-defined]
                warnings.warn("Detected call of `lr_scheduler.step()` before "
                              "`optimizer.step()`. You should call them in the opposite order: "
                              "`optimizer.step()` before `lr_scheduler.step()`. Failure to do "
                              "this will result in skipping the first value of the learning "
                              "rate schedule.", UserWarning)
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning)
                self.last_epoch = epoch  # type: ignore[assignment]
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for i, (group, lr) in enumerate(zip(self.optimizer.param_groups, values)):
            group["lr"] = lr
            self.print_lr(self.verbose, i, lr, epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler  # PyTorch 1.13's name


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(epoch)`` (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Union[Callable[[int], float],
                                                              Sequence[Callable[[int], float]]],
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch, verbose)

    def state_dict(self) -> Dict[str, Any]:
        """As the base's, with the lambdas' ``__dict__`` for callable objects (None for
        plain functions, which are not saved), as PyTorch does."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)

    def get_lr(self) -> List[float]:
        self._warn_outside_step()
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> List[float]:
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` at each milestone epoch (a repeated milestone counts
    as many times as it is listed)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> List[float]:
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> List[float]:
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """Scales the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        if start_factor > 1.0 or start_factor < 0:
            raise ValueError("Starting multiplicative factor expected to be between 0 and 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> List[float]:
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        span = self.end_factor - self.start_factor
        return [group["lr"] * (1. + span / (self.total_iters * self.start_factor
                                            + (self.last_epoch - 1) * span))
                for group in groups]

    def _get_closed_form_lr(self) -> List[float]:
        return [base_lr * (self.start_factor + (self.end_factor - self.start_factor)
                           * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (and back,
    past ``T_max``), in PyTorch's recursive form."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> List[float]:
        self._warn_outside_step()
        groups, t, eta = self.optimizer.param_groups, self.last_epoch, self.eta_min
        if t == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and t > 0:
            return [eta + (base_lr - eta) * (1 + math.cos(t * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (t - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - eta) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * t / self.T_max))
                / (1 + math.cos(math.pi * (t - 1) / self.T_max)) * (group["lr"] - eta) + eta
                for group in groups]

    def _get_closed_form_lr(self) -> List[float]:
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


from .one_cycle import OneCycleLR  # noqa: E402  (it subclasses LRScheduler)
