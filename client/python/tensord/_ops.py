"""Module-level functions with PyTorch's signatures: creation ops and the common math ops.

Any other op of the daemon's catalog is reachable as ``tensord.<name>`` through the package's
``__getattr__`` (see ``_catalog_function.CatalogFunction``).
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence

import numpy as np

from . import _context, _dtype, _tensor
from ._site import call_site
from ._tensor import Tensor, call
from ._tensor_methods import _dims, _shape_args

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "randn",
    "rand", "zeros_like", "ones_like", "empty_like", "full_like", "randn_like", "rand_like",
    "add", "sub", "mul", "div", "neg", "matmul", "mm", "relu", "sum", "mean", "reshape",
    "transpose", "t", "flatten", "subtract", "multiply", "divide", "negative", "true_divide",
]


def _creation(name: str, attrs: dict, requires_grad: bool) -> Tensor:
    s = _context.default_session()
    out = call(name, [], attrs, session=s)
    if attrs.get("device"):
        out._dev = _dtype.device_str(attrs["device"])
    if requires_grad:  # a fresh op output is a leaf: mark it (queued, no wait)
        s.set_requires_grad(out._handle, True, call_site())
        out._rg = True
    return out


# ---------------------------------------------------------------- from data

def tensor(data: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, a NumPy array or a
    Tensor). Without ``dtype``: bool, int64 or float32 for Python data, the array's own dtype
    for NumPy arrays, as ``torch.tensor`` does."""
    if isinstance(data, Tensor):
        arr = data.numpy()
        dt = dtype or data.dtype
        s = data._session
    else:
        s = _context.default_session()
        if isinstance(data, (np.ndarray, np.generic)):
            arr = np.asarray(data)
            dt = dtype or _dtype.from_numpy_dtype(arr.dtype)
        else:
            arr = np.asarray(data)
            if dtype is not None:
                dt = dtype
            elif arr.dtype.kind == "b":
                dt = _dtype.bool_
            elif arr.dtype.kind in "iu":
                dt = _dtype.int64
            elif arr.dtype.kind == "f":
                dt = _dtype.float32
            else:
                raise TypeError(f"tensor(): can't make a tensor of {arr.dtype} values "
                                f"from {type(data).__name__}")
    return _tensor.upload(s, arr, dt, device, requires_grad)


def as_tensor(data: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None) -> Tensor:
    """``data`` if it is already a Tensor of that dtype/device, else ``tensor(data, ...)``."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor with a copy of ``ndarray``'s values and its dtype (unlike PyTorch the memory is
    not shared: the values live in the daemon)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return _tensor.upload(_context.default_session(), ndarray,
                          _dtype.from_numpy_dtype(ndarray.dtype))


# ---------------------------------------------------------------- creation

def zeros(*size: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _creation("zeros", {"shape": _shape_args(size), "dtype": dtype, "device": device},
                     requires_grad)


def ones(*size: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _creation("ones", {"shape": _shape_args(size), "dtype": dtype, "device": device},
                     requires_grad)


def empty(*size: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor."""
    return _creation("empty", {"shape": _shape_args(size), "dtype": dtype, "device": device},
                     requires_grad)


def full(size: Sequence[int], fill_value: Any, *, dtype: Optional[_dtype.dtype] = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; its dtype follows the value (bool, int64, float32)
    unless given."""
    if dtype is None:
        dtype = _tensor.scalar_dtype(fill_value)
    return _creation("full", {"shape": _shape_args((size,)), "fill_value": float(fill_value),
                              "dtype": dtype, "device": device}, requires_grad)


def arange(start: Any = 0, end: Any = None, step: Any = 1, *,
           dtype: Optional[_dtype.dtype] = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(5)``,
    ``arange(1, 4)``, ``arange(0, 1, 0.25)``. int64 when every argument is an int."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in (start, end, step))
        dtype = _dtype.int64 if ints else _dtype.float32
    return _creation("arange", {"start": float(start), "end": float(end), "step": float(step),
                                "dtype": dtype, "device": device}, requires_grad)


def randn(*size: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Samples of the standard normal distribution (see ``manual_seed``)."""
    return _creation("randn", {"shape": _shape_args(size), "dtype": dtype, "device": device},
                     requires_grad)


def rand(*size: Any, dtype: Optional[_dtype.dtype] = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Samples of the uniform distribution on [0, 1)."""
    return _creation("rand", {"shape": _shape_args(size), "dtype": dtype, "device": device},
                     requires_grad)


def _like(name: str, input: Tensor, dtype: Any, device: Any, requires_grad: bool,
          **attrs: Any) -> Tensor:
    s = input._session
    if name + "_like" in s.catalog:  # the daemon's *_like op: no wait for input's shape
        attrs.update(dtype=dtype, device=device)
        out = call(name + "_like", [input], attrs)
        if device is not None:
            out._dev = _dtype.device_str(device)
        if requires_grad:
            s.set_requires_grad(out._handle, True, call_site())
            out._rg = True
        return out
    info = input._meta()
    attrs.update(shape=list(info.shape), dtype=dtype or info.dtype,
                 device=device if device is not None else info.device)
    return _creation(name, attrs, requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Zeros with ``input``'s shape, dtype and device."""
    return _like("zeros", input, dtype, device, requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Ones with ``input``'s shape, dtype and device."""
    return _like("ones", input, dtype, device, requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """An uninitialized tensor with ``input``'s shape, dtype and device."""
    return _like("empty", input, dtype, device, requires_grad)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """``fill_value`` with ``input``'s shape, dtype and device."""
    return _like("full", input, dtype, device, requires_grad, fill_value=float(fill_value))


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Normal samples with ``input``'s shape, dtype and device."""
    return _like("randn", input, dtype, device, requires_grad)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Uniform samples with ``input``'s shape, dtype and device."""
    return _like("rand", input, dtype, device, requires_grad)


# -------------------------------------------------------------------- math

def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other``, with broadcasting."""
    return call("add", [input, other], {"alpha": None if alpha == 1 else alpha})


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``, with broadcasting."""
    return call("sub", [input, other], {"alpha": None if alpha == 1 else alpha})


def mul(input: Any, other: Any) -> Tensor:
    """Elementwise product, with broadcasting."""
    return call("mul", [input, other])


def div(input: Any, other: Any, *, rounding_mode: Optional[str] = None) -> Tensor:
    """Elementwise true division, with broadcasting."""
    return call("div", [input, other], {"rounding_mode": rounding_mode})


subtract, multiply, divide, true_divide = sub, mul, div, div


def neg(input: Tensor) -> Tensor:
    """``-input``."""
    return call("neg", [input])


negative = neg


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """Matrix product with PyTorch's ``matmul`` rules (batched, broadcasting)."""
    return call("matmul", [input, other])


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    """Product of two matrices (``mm`` where the daemon has it, else ``matmul``)."""
    name = "mm" if "mm" in _tensor._session_of([input]).catalog else "matmul"
    return call(name, [input, mat2])


def relu(input: Tensor) -> Tensor:
    """``max(input, 0)`` elementwise."""
    return call("relu", [input])


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (an int or tuple of ints; None: all)."""
    return call("sum", [input], {"dim": _dims(dim), "keepdim": keepdim or None, "dtype": dtype})


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim`` (an int or tuple of ints; None: all)."""
    return call("mean", [input], {"dim": _dims(dim), "keepdim": keepdim or None, "dtype": dtype})


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """The same values with a new shape (one dimension may be -1)."""
    return call("reshape", [input], {"shape": [operator.index(s) for s in shape]})


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps dimensions ``dim0`` and ``dim1``."""
    return call("transpose", [input], {"dim0": dim0, "dim1": dim1})


def t(input: Tensor) -> Tensor:
    """Transpose of a tensor of at most 2 dimensions."""
    return input.t()


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Flattens dimensions ``start_dim..end_dim`` into one."""
    return input.flatten(start_dim, end_dim)
