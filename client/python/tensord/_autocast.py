"""``tensord.autocast``: the daemon's automatic mixed precision for the ops queued inside.

``with td.autocast(td.bfloat16):`` sends ``SetOptions.autocast`` on entry and the previous
setting on exit; the daemon then casts each op's floating inputs by PyTorch's CUDA policy
(matmuls, convolutions and linear in the low dtype; exp, log, norms, losses, softmax and
reductions in float32; mixed ops in the widest input dtype; every other op as called;
runtime/autograd/autocast.cc). The casts are recorded by autograd, so float32 parameters keep
float32 gradients: the optimizer updates float32 master weights. Like grad mode on the
daemon, the setting belongs to the session's command stream, not to a thread.
"""

from __future__ import annotations

from typing import Any, Optional

from . import _context
from ._dtype import bfloat16, dtype, float16


class autocast:  # noqa: N801 (PyTorch's name)
    """Mixed precision for the ops queued inside the block (see the module docstring)."""

    def __init__(self, dtype: dtype = bfloat16, enabled: bool = True,
                 session: Optional[Any] = None) -> None:
        if enabled and dtype not in (bfloat16, float16):
            raise ValueError(f"autocast runs in bfloat16 or float16, not {dtype}")
        self._dtype = dtype if enabled else None
        self._session = session
        self._previous: Any = None

    def __enter__(self) -> "autocast":
        s = self._session or _context.default_session()
        self._session = s
        self._previous = s._autocast
        s.set_options(autocast=self._dtype or False)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._session.set_options(autocast=self._previous or False)
