"""The CPU fallback for ATen ops that neither the daemon nor a decomposition covers.

Downloads the op's tensord inputs (one round trip), runs the op with PyTorch on the client's
CPU, uploads its outputs, and writes mutated inputs back. Each op warns once and is counted:
``tensord.torch.fallback_counts()`` says which ops left the daemon and how often, so a program
meant to run on the daemon alone can assert that none did (the tests do). Under
``torch.profiler`` each fallback is a ``tensord_fallback::<op>`` range covering its round trip.

Each fallback is also reported to the daemon (Note [Client fallbacks]: ``Session.note_fallback``,
a ``NoteFallbacks`` command that travels with the fallback's own uploads, no extra round trip),
which counts it for the session: ``tensorctl sessions`` and ``users`` show the counts, and the
session's profiler (``tensord.profiler``, ``tensorctl profile``) lists the fallbacks of its
window.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import warnings
from typing import Any, Dict

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import _connection, _transfer
from ._tensor import TensordTensor

_lock = threading.Lock()
_counts: "collections.Counter[str]" = collections.Counter()
_warned: set = set()
_TORCH_DIR = os.path.dirname(torch.__file__)
_TENSORD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FallbackWarning(UserWarning):
    """An ATen op ran on the client's CPU instead of the daemon (``fallback_counts()``)."""


def counts() -> Dict[str, int]:
    """ATen op name -> how many times it ran on the client's CPU since the last reset."""
    with _lock:
        return dict(_counts)


def reset_counts() -> None:
    with _lock:
        _counts.clear()


def _note(name: str) -> None:
    with _lock:
        _counts[name] += 1
        first = name not in _warned
        _warned.add(name)
    if os.environ.get("TENSORD_TORCH_NO_FALLBACK") == "1":
        raise NotImplementedError(f"{name}: the tensord device has no mapping for this op and "
                                  "TENSORD_TORCH_NO_FALLBACK=1 forbids the CPU fallback")
    if first:
        warnings.warn(f"{name} is not mapped onto the tensord daemon's ops: it runs on the "
                      "client's CPU (download, compute, upload), here and every later time",
                      FallbackWarning, stacklevel=_program_level())


def _program_level() -> int:
    """The ``stacklevel`` of the first frame outside torch and tensord: the program's line."""
    frame, level = sys._getframe(2), 2
    while frame is not None:
        f = frame.f_code.co_filename
        if not (f.startswith(_TORCH_DIR) or f.startswith(_TENSORD_DIR) or "<" in f):
            return level
        frame, level = frame.f_back, level + 1
    return 2


def run(func: Any, args: Any, kwargs: Any) -> Any:
    """``func`` run on CPU copies of the tensord tensors among ``args``/``kwargs``."""
    from . import _dispatch
    _note(str(func))
    _connection.session().note_fallback(str(func))
    originals: Dict[int, TensordTensor] = {}

    def to_cpu(x: Any) -> Any:
        if isinstance(x, TensordTensor):
            c = _transfer.download(_dispatch.payload(x), x.dtype)
            originals[id(c)] = x
            return c
        if isinstance(x, torch.device) and x.type == "tensord":
            return torch.device("cpu")
        return x

    # A range in torch.profiler's trace around the whole round trip (download, CPU op,
    # upload), named so that a profile shows which ops left the daemon and what they cost.
    with torch.profiler.record_function(f"tensord_fallback::{func}"):
        return _run_on_cpu(func, args, kwargs, to_cpu, originals)


def _run_on_cpu(func: Any, args: Any, kwargs: Any, to_cpu: Any,
                originals: Dict[int, TensordTensor]) -> Any:
    from . import _dispatch
    cargs, ckwargs = tree_map(to_cpu, (args, kwargs))
    by_cpu = {id(c): c for c in tree_flatten((cargs, ckwargs))[0] if id(c) in originals}
    out = func(*cargs, **ckwargs)
    s = _connection.session()
    # Inputs the op wrote (in-place and out= ops): their new values go back.
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            v = (cargs[i] if i < len(cargs) else ckwargs.get(a.name)) if a.kwarg_only is False \
                else ckwargs.get(a.name)
            for c in (v if isinstance(v, (list, tuple)) else [v]):
                if isinstance(c, torch.Tensor) and id(c) in by_cpu:
                    _dispatch.assign(originals[id(c)], _transfer.upload(s, c))

    def back(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if id(x) in originals:
                return originals[id(x)]
            return TensordTensor(_transfer.upload(s, x), x.shape, dtype=x.dtype)
        return x

    return tree_map(back, out)
