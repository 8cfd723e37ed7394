"""Registers PyTorch's PrivateUse1 backend as the ``tensord`` device (once per process).

What PyTorch needs of a device, in its Python form (``torch.utils.backend_registration``): the
backend's name, generated ``Tensor.tensord()``/``is_tensord`` methods, a device module
(``torch.tensord``: ``synchronize``, ``manual_seed``, ``device_count`` ...), the PrivateUse1
hooks and device guard (the autograd engine asks them for devices), and kernels for the two
factory ops that take no tensor, ``empty.memory_format``, ``empty_strided`` and
``arange.start_step`` and ``linspace`` (one daemon op instead of an ``out=`` op) and ``_efficientzerotensor``: every other factory
(``zeros``, ``randn``, ``full``, ``to``) is one of those plus an op on the new tensor, which then
reaches ``TensordTensor.__torch_dispatch__``; and ``_copy_from``, which PyTorch calls below the
Python key (``torch.tensor(data, device="tensord")``).
"""

from __future__ import annotations

import math
import os
import types
from typing import Any, Optional

import torch

NAME = "tensord"
_DEFAULT_SEED = 67280421310721  # runtime/generator.h's kDefaultSeed
_done = False


def _device_module() -> types.ModuleType:
    from . import _connection

    m = types.ModuleType("torch.tensord", "The tensord device's module (torch.tensord).")

    def synchronize(device: Any = None) -> None:
        """Waits until the daemon ran every op queued so far; raises the first op error."""
        s = _connection.current()
        if s is not None:
            s.synchronize()

    def manual_seed(seed: int) -> None:
        """Seeds the daemon's generator of the device's session."""
        _connection.manual_seed(seed)

    def get_rng_state(device: Any = None) -> torch.Tensor:
        """The seed last given to ``manual_seed`` (or the daemon's default), as 8 bytes.

        Not yet the generator's position: the daemon does not report how far its stream has
        gone, so ``set_rng_state`` of this state restarts the stream at that seed (what
        ``torch.testing``'s ``freeze_rng_state`` around a seeded call needs; a program that
        saves and restores mid-stream gets the seed's first values again).
        """
        seed = _connection._seed if _connection._seed is not None else _DEFAULT_SEED
        return torch.tensor(list(int(seed).to_bytes(8, "little")), dtype=torch.uint8)

    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        """Re-seeds the daemon's generator with a ``get_rng_state`` state (its docstring)."""
        _connection.manual_seed(int.from_bytes(bytes(state.cpu().tolist()), "little"))

    m.get_rng_state = get_rng_state
    m.set_rng_state = set_rng_state

    from . import _memory

    m.synchronize = synchronize
    for name in ("memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved", "reset_peak_memory_stats"):
        setattr(m, name, getattr(_memory, name))
    m.manual_seed = manual_seed
    m.manual_seed_all = manual_seed
    m.is_available = lambda: True
    m.is_initialized = lambda: True
    m._is_in_bad_fork = lambda: False
    m._lazy_init = lambda: None
    m.device_count = lambda: 1
    m.current_device = lambda: 0
    # torch.autocast(device_type="tensord", dtype=...) accepts these (_autocast.py)
    m.get_amp_supported_dtype = lambda: [torch.bfloat16, torch.float16, torch.float32]
    return m


def register() -> None:
    """Makes ``tensord`` a PyTorch device; a no-op after the first call."""
    global _done
    if _done:
        return
    if not hasattr(torch._C, "_acc"):
        raise ImportError(f"the tensord PyTorch device needs a PyTorch with Python PrivateUse1 "
                          f"backends (torch._C._acc; PyPI's current release); this is "
                          f"{torch.__version__}")
    current = torch._C._get_privateuse1_backend_name()
    if current not in ("privateuseone", NAME):
        raise RuntimeError(f"PyTorch's PrivateUse1 backend is already '{current}'; the tensord "
                           "device needs it")
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend
    _setup_privateuseone_for_python_backend(
        rename=NAME if current != NAME else None, backend_module=_device_module())
    _register_factories()
    from . import _autocast
    _autocast.register()
    from .. import _site
    _site.add_library_dir(os.path.dirname(torch.__file__))  # errors name the program's line
    # torch.load's default weights_only unpickler admits only known functions: the device's
    # tensors are pickled as ``_tensor._rebuild(cpu_tensor, requires_grad)``.
    from ._tensor import _rebuild
    torch.serialization.add_safe_globals([_rebuild])
    _done = True


_lib: Optional[torch.library.Library] = None


def _register_factories() -> None:
    global _lib
    from . import _transfer
    from .._tensor import call as native_call
    from ._connection import session
    from ._special import new_lazy

    _lib = torch.library.Library("aten", "IMPL")

    def empty_memory_format(size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                            pin_memory: Any = None, memory_format: Any = None) -> torch.Tensor:
        _check_index(device)
        return new_lazy(size, dtype or torch.get_default_dtype())

    def empty_strided(size: Any, stride: Any, dtype: Any = None, layout: Any = None,
                      device: Any = None, pin_memory: Any = None) -> torch.Tensor:
        _check_index(device)
        return new_lazy(size, dtype or torch.get_default_dtype())

    def arange(start: Any, end: Any, step: Any = 1, dtype: Any = None, layout: Any = None,
               device: Any = None, pin_memory: Any = None) -> torch.Tensor:
        _check_index(device)
        if dtype is None:
            floats = any(isinstance(v, float) for v in (start, end, step))
            dtype = torch.get_default_dtype() if floats else torch.int64
        t = new_lazy((max(0, math.ceil((end - start) / step)),), dtype)
        t._td = native_call("arange", [], {"start": float(start), "end": float(end),
                                           "step": float(step),
                                           "dtype": _transfer.native_dtype(dtype)},
                            session=session())
        return t

    def linspace(start: Any, end: Any, steps: int, dtype: Any = None, layout: Any = None,
                 device: Any = None, pin_memory: Any = None) -> torch.Tensor:
        # The daemon's linspace, as PyTorch's CPU kernel: an integer dtype truncates the bounds
        # first (PyTorch's Python decomposition, which the device would otherwise run, does not:
        # linspace(0.5, 9.7, 6, dtype=int64) is [0, 1, 3, 5, 7, 9] on the CPU, [0, 2, 4, 6, 7, 9]
        # decomposed). Floating dtypes: within an ulp of PyTorch's (whose own vectorised lanes
        # differ from its scalar loop, and with the CPU's vector width).
        _check_index(device)
        dtype = dtype or torch.get_default_dtype()
        if steps < 0:
            raise RuntimeError("linspace(): number of steps must be non-negative")
        t = new_lazy((steps,), dtype)
        t._td = native_call("linspace", [], {"start": float(start), "end": float(end),
                                             "steps": int(steps),
                                             "dtype": _transfer.native_dtype(dtype)},
                            session=session())
        return t

    def efficient_zeros(size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                        pin_memory: Any = None) -> torch.Tensor:
        # PyTorch's zero tensor for a gradient that is zero by construction (sgn's backward):
        # the daemon's zeros (the device has no storage-less zero tensors).
        _check_index(device)
        dtype = dtype or torch.get_default_dtype()
        t = new_lazy(size, dtype)
        t._td = native_call("zeros", [], {"shape": list(size),
                                          "dtype": _transfer.native_dtype(dtype)},
                            session=session())
        return t

    def copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> Any:
        # Reached where PyTorch dispatches below the Python key (torch.tensor(..., device=)):
        # the same copy as copy_'s handler.
        from ._special import copy_
        return copy_(torch.ops.aten.copy_.default, (dst, src), {})

    _lib.impl("empty.memory_format", empty_memory_format, "PrivateUse1")
    _lib.impl("empty_strided", empty_strided, "PrivateUse1")
    _lib.impl("arange.start_step", arange, "PrivateUse1")
    _lib.impl("arange.start", lambda start, end, **kw: arange(start, end, 1, **kw), "PrivateUse1")
    _lib.impl("arange", lambda end, **kw: arange(0, end, 1, **kw), "PrivateUse1")
    _lib.impl("linspace", linspace, "PrivateUse1")
    _lib.impl("_copy_from", copy_from, "PrivateUse1")
    _lib.impl("_efficientzerotensor", efficient_zeros, "PrivateUse1")
    from . import _attention, _linear, _out_rebinding
    _out_rebinding.register(_lib)  # out= composites that rebind instead of writing
    _attention.register(_lib)  # F.scaled_dot_product_attention on the fused rows
    _linear.register(_lib)  # F.linear as one daemon Call (Note [One linear])


def _check_index(device: Any) -> None:
    if device is not None and device.index not in (None, 0):
        raise RuntimeError(f"{device}: the tensord device has one index, tensord:0, the session's "
                           "default device; connect(device=...) chooses which daemon device "
                           "that is (docs/clients.md, Note [tensord:N])")
