"""Neural-network building blocks, laid out as ``torch.nn``. So far: ``functional``."""

from . import functional

__all__ = ["functional"]
