"""Session commands for autograd (docs/protocol.md "Autograd"): ``Backward``,
``SetRequiresGrad``, ``GetGrad`` and ``SetGrad``.

A mixin of ``Session``: these methods use its lock and open batch, and allocate output handles
from its handle counter under that lock. The public API built on them (``Tensor.backward``,
``Tensor.grad``, ``requires_grad_()``, ``tensord.autograd``) is in ``_autograd_methods.py`` and
``autograd.py``.
"""

from __future__ import annotations

from typing import Any, Sequence, Tuple

from . import _grad


class GradCommands:
    """Autograd commands of a session; state lives in ``Session.__init__``."""

    __slots__ = ()

    _lock: Any
    _next_handle: int

    def backward(self, roots: Sequence[int], grads: Sequence[int], *, retain_graph: bool,
                 create_graph: bool, inputs: Sequence[int] = (), allow_unused: bool = False,
                 site: str = "") -> Tuple[int, int]:
        """Queues one Backward (the whole backward pass); returns (first output handle, seq).
        Outputs exist only with ``inputs`` (autograd.grad): one new handle per input."""
        grad = _grad.is_grad_enabled()
        with self._lock:
            self._check_open_locked()
            self._grad_mode_locked(grad)
            cmd = self._add_locked()
            b = cmd.backward
            b.roots.extend(roots)
            b.grads.extend(grads)
            b.retain_graph = retain_graph
            b.create_graph = create_graph
            b.inputs.extend(inputs)
            first = self._next_handle
            self._next_handle += len(inputs)
            b.outputs.extend(range(first, first + len(inputs)))
            b.allow_unused = allow_unused
            b.site = site
            seq = cmd.seq
            if not inputs:  # backward(): its errors come back with a check, not a wait
                self._queue_check_locked()
            self._after_add_locked()
        return first, seq

    def set_requires_grad(self, handle: int, requires_grad: bool, site: str) -> None:
        """Queues SetRequiresGrad (leaves only; on a non-leaf it fails like an op)."""
        with self._lock:
            self._check_open_locked()
            c = self._add_locked().set_requires_grad
            c.handle = handle
            c.requires_grad = requires_grad
            c.site = site
            self._after_add_locked()

    def get_grad(self, handle: int) -> Tuple[int, int]:
        """Queues GetGrad; returns (the new handle naming ``handle``'s .grad, seq). Its meta
        says ``is_none`` when there is no gradient."""
        with self._lock:
            self._check_open_locked()
            cmd = self._add_locked()
            out = self._next_handle
            self._next_handle += 1
            cmd.get_grad.handle = handle
            cmd.get_grad.output = out
            seq = cmd.seq
            self._after_add_locked()
        return out, seq

    def set_grad(self, handle: int, grad: int) -> None:
        """Queues SetGrad (``grad = 0``: None)."""
        with self._lock:
            self._check_open_locked()
            c = self._add_locked().set_grad
            c.handle = handle
            c.grad = grad
            self._after_add_locked()
