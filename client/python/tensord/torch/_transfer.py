"""Moving values between PyTorch CPU tensors and daemon handles, and the dtype table.

An upload is one ``Put`` (chunked by the native client); a download is one ``Get`` and is the only
kind of wait the device has (``.cpu()``, ``item()``, ``print``, ``tolist()``).
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import torch

from .. import _dtype, _errors
from .._tensor import Tensor as NativeTensor
from .._tensor import upload as _native_upload

# torch dtype -> the native client's dtype (the daemon's dtypes)
TO_NATIVE: Dict[torch.dtype, Any] = {
    torch.float32: _dtype.float32, torch.float64: _dtype.float64,
    torch.float16: _dtype.float16, torch.bfloat16: _dtype.bfloat16,
    torch.int64: _dtype.int64, torch.int32: _dtype.int32, torch.int8: _dtype.int8,
    torch.uint8: _dtype.uint8, torch.bool: _dtype.bool_,
}
FROM_NATIVE = {v.name: k for k, v in TO_NATIVE.items()}


def native_dtype(dt: torch.dtype) -> Any:
    d = TO_NATIVE.get(dt)
    if d is None:
        raise TypeError(f"the tensord device has no {dt} tensors; supported: "
                        f"{', '.join(str(k) for k in TO_NATIVE)}")
    return d


def upload(session: Any, cpu: torch.Tensor) -> NativeTensor:
    """A new handle holding the value of the CPU tensor ``cpu`` (any layout), in its dtype."""
    cpu = cpu.detach()
    dt = native_dtype(cpu.dtype)
    if cpu.dtype == torch.bfloat16:  # NumPy has no bfloat16: send the bits as they are
        bits = cpu.contiguous().view(torch.int16).numpy().view(np.uint16)
        handle, seq = session.put(bits, dt.proto, tuple(cpu.shape), "", False, "")
        return NativeTensor._make(session, handle, seq, None)
    arr = cpu.resolve_conj().resolve_neg().contiguous().numpy()
    return _native_upload(session, arr, dt, site="")


class OutOfMemoryError(torch.OutOfMemoryError, _errors.OutOfMemoryError):
    """The daemon's RESOURCE_EXHAUSTED (out of memory, over quota) as PyTorch names it."""


def download(td: NativeTensor, dtype: torch.dtype) -> torch.Tensor:
    """The value of handle ``td`` as a new contiguous CPU tensor of ``dtype`` (one round trip).
    An op error that spoiled it raises here: PyTorch's ``OutOfMemoryError`` for the daemon's
    RESOURCE_EXHAUSTED, else the native client's error (a ``RuntimeError``, as in PyTorch)."""
    try:
        arr = td.numpy()
    except _errors.OutOfMemoryError as e:
        raise OutOfMemoryError(str(e)) from e
    if dtype == torch.bfloat16:  # the native client widens bfloat16 to float32
        return torch.from_numpy(np.array(arr, dtype=np.float32)).to(torch.bfloat16)
    out = torch.from_numpy(np.array(arr, copy=True) if not arr.flags.writeable else arr)
    return out if out.dtype == dtype else out.to(dtype)
