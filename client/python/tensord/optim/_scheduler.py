"""``LRScheduler``, the base of every learning-rate schedule (``lr_scheduler``, ``one_cycle``),
as ``torch.optim.lr_scheduler.LRScheduler`` (PyTorch 1.13's); see ``lr_scheduler`` for what
the schedules do. Apart so that ``lr_scheduler`` can list ``OneCycleLR`` with the others
without an import cycle."""

from __future__ import annotations

import warnings
import weakref
from functools import wraps
from typing import Any, Dict, List, Optional, Union

from .optimizer import Optimizer

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
