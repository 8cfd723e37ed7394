"""``import tensord.torch``: PyTorch itself as a tensord client, through a ``tensord`` device.

After the import, ``torch.randn(3, device="tensord")``, ``x.to("tensord")``,
``model.to("tensord")`` and everything above them (``nn``, ``optim``, autograd) run their ATen
ops on a tensord daemon: each op becomes a command of one session's stream with a client-chosen
handle; output shapes come from PyTorch's meta functions on the client, so nothing waits but
reads (``.cpu()``, ``item()``, ``print``, ``tolist()``). PyTorch's autograd engine runs on the
client and its backward ops travel like any other. ::

    import torch
    import tensord.torch  # noqa: F401  (registers the device)

    device = "tensord"    # the only line a program changes
    model = Net().to(device)

The session opens at the first tensor made on the device, from ``$TENSORD_ADDRESS`` /
``$TENSORD_TOKEN``, unless ``tensord.torch.connect(address, token, device=...)`` opened it.
``tensord:0`` is the session's default daemon device (Note [tensord:N] in ``_connection``).

Ops the daemon lacks run as PyTorch's decompositions into ops it has, else on the client's CPU
(``fallback_counts()`` says which; each warns once). Needs a PyTorch with Python PrivateUse1
backends (``torch._C._acc``: PyTorch 2.9 or newer).
"""

from __future__ import annotations

from ._registration import register as _register

_register()

from ._connection import close, connect, current, manual_seed, session  # noqa: E402
from ._fallback import FallbackWarning  # noqa: E402
from ._fallback import counts as fallback_counts  # noqa: E402
from ._fallback import reset_counts as reset_fallback_counts  # noqa: E402
from ._memory import (max_memory_allocated, max_memory_reserved, memory_allocated,  # noqa: E402
                      memory_reserved, memory_stats, reset_peak_memory_stats)
from ._tensor import DEVICE, TensordTensor  # noqa: E402


def synchronize() -> None:
    """Waits until the daemon ran every op queued so far (``torch.tensord.synchronize()``)."""
    s = current()
    if s is not None:
        s.synchronize()


def mapped_ops() -> list:
    """The ATen overloads that map straight onto the daemon's catalog (``_aten_table``)."""
    from . import _aten_table
    return sorted(str(op) for op in _aten_table.RULES)


__all__ = ["DEVICE", "FallbackWarning", "TensordTensor", "close", "connect", "current",
           "fallback_counts", "manual_seed", "mapped_ops", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_fallback_counts", "reset_peak_memory_stats", "session", "synchronize"]
