"""Optimizers, as ``torch.optim``: each step is one fused daemon command per parameter
group."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
