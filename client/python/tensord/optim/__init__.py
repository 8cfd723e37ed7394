"""Optimizers, as ``torch.optim``: SGD and Adam/AdamW step with one fused daemon command per
parameter group; RMSprop, Adagrad and Adadelta are composed from daemon ops (``composed``);
``lr_scheduler`` as PyTorch's."""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
           "lr_scheduler"]
