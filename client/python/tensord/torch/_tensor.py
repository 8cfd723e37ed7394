"""``TensordTensor``: a PyTorch tensor on the ``tensord`` device whose value is a daemon handle.

It is a wrapper subclass (``torch.Tensor._make_wrapper_subclass``): PyTorch keeps its sizes,
strides, dtype, ``requires_grad``, autograd graph and version counter on the client, with no
storage; ``_td`` is the native client's ``tensord.Tensor`` holding the value (its handle is
released when the last wrapper dropping it goes). Every ATen op reaching it below autograd goes
to ``__torch_dispatch__`` (``_dispatch.dispatch``).

Note [Lazy payload]: a tensor made by ``torch.empty`` on the device (the first step of
``x.to("tensord")``, ``torch.zeros``, ``torch.randn`` ...) has ``_td = None`` until an op writes
all of it (``copy_``, ``fill_``, ``normal_`` ...), which then binds its result instead of
writing into a fresh daemon tensor; any other use, a view first of all, materializes it with
the daemon's ``empty``. So no view of a payload-less tensor exists, and binding is safe.

Note [Poisoned backward values]: PyTorch's autograd engine runs a device's backward ops on a
thread of its own, and an exception raised there by ``__torch_dispatch__`` is lost (the engine
reports a SystemError without it). So an op that fails inside a backward pass does not raise:
its outputs carry the error (``_error``), every op reading them passes it on, and the first
read (``.grad.cpu()``, ``item()``) raises it: the daemon's own rule, errors stay with the
values they spoil (DESIGN.md).

Note [Strides mirror the daemon]: a view's strides are PyTorch's (its meta function's), which the
daemon's views follow too; any other op's result is contiguous, as the daemon's kernels write
them. So ``is_contiguous()``, ``view`` legality and ``stride()`` agree on both sides.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import torch

DEVICE = torch.device("tensord", 0)  # _registration renamed PrivateUse1 before this import


def contiguous_strides(size: Sequence[int]) -> tuple:
    strides = []
    acc = 1
    for s in reversed(size):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


class TensordTensor(torch.Tensor):
    """A tensor on ``tensord:0``; see the module docstring."""

    _td: Any  # tensord.Tensor, or None before its first full write (Note [Lazy payload])
    _error: Optional[BaseException]  # Note [Poisoned backward values]

    @staticmethod
    def __new__(cls, td: Any, size: Sequence[int], stride: Optional[Sequence[int]] = None,
                offset: int = 0, dtype: torch.dtype = torch.float32,
                requires_grad: bool = False) -> "TensordTensor":
        return make(td, size, stride if stride is not None else contiguous_strides(size),
                    offset, dtype, requires_grad)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # all done in __new__
        pass

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        _dispatch = _dispatch_module or _load_dispatch()
        try:
            return _dispatch.dispatch(func, args, kwargs or {})
        except Exception as e:
            if torch._C._current_graph_task_id() == -1:
                raise
            return _dispatch.poisoned(func, args, kwargs or {}, e)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        """PyTorch's text of the value (one download), with the device and autograd suffix."""
        with torch.no_grad():
            text = repr(self.detach().cpu())
        extra = f", device='{self.device}'"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return text[:-1] + extra + ")"

    __str__ = __repr__

    def numpy(self, *, force: bool = False) -> Any:
        """As for a CUDA tensor: refused, unless ``force`` (which copies to the CPU first)."""
        if not force:
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self.detach().cpu().numpy()

    def tolist(self) -> Any:
        """The value as nested Python lists (one download)."""
        with torch.no_grad():
            return self.detach().cpu().tolist()

    # The traceable-subclass protocol (no inner tensors: the handle is the context). With it,
    # ``Module._apply`` (``model.to("tensord")``) swaps each parameter in place
    # (``torch.utils.swap_tensors``) instead of making new ones, so parameters shared by two
    # modules (tied weights) stay one parameter.
    def __tensor_flatten__(self) -> Any:
        return [], (self._td, self._error, self.dtype, self.storage_offset())

    @staticmethod
    def __tensor_unflatten__(inner: Any, ctx: Any, outer_size: Any, outer_stride: Any) -> Any:
        t = TensordTensor(ctx[0], outer_size, outer_stride, ctx[3], ctx[2])
        t._error = ctx[1]
        return t

    def __deepcopy__(self, memo: dict) -> "TensordTensor":
        """A copy on the daemon (``clone``), as a Parameter if this is one, with its ``grad``
        copied too: what ``copy.deepcopy`` gives for a CUDA tensor (the handle itself, a
        session's object, cannot be copied)."""
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            new = self.detach().clone()
        if getattr(self, "_is_param", False):
            new = torch.nn.Parameter(new, self.requires_grad)
        elif self.requires_grad:
            new.requires_grad_()
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        return new

    def __reduce_ex__(self, protocol: int) -> Any:
        """Pickles (``torch.save``, ``copy.deepcopy`` of a module) as a CPU copy that comes back
        on the device: the daemon's handles do not outlive the session."""
        return (_rebuild, (self.detach().cpu(), self.requires_grad))


_make_wrapper = torch.Tensor._make_wrapper_subclass


def make(td: Any, size: Sequence[int], stride: Sequence[int], offset: int,
         dtype: torch.dtype, requires_grad: bool = False) -> TensordTensor:
    """``TensordTensor(td, size, stride, offset, dtype)``; called directly, without the class's
    constructor frames (the device's per-op path: Note [Direct calls])."""
    r = _make_wrapper(TensordTensor, size, strides=stride, storage_offset=offset, dtype=dtype,
                      device=DEVICE, requires_grad=requires_grad)
    r._td = td
    r._error = None
    return r


_dispatch_module: Any = None


def _load_dispatch() -> Any:
    global _dispatch_module
    from . import _dispatch
    _dispatch_module = _dispatch
    return _dispatch


def _rebuild(cpu: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    t = cpu.to(DEVICE)
    return t.requires_grad_() if requires_grad else t
