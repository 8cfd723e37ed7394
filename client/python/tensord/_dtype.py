"""dtype, device and Size: the small value types of the client, named as in PyTorch.

A ``dtype`` maps onto the wire enum (``tensord.v1.DType``) and onto the NumPy dtype used to hold
downloaded values. NumPy has no bfloat16: its values are carried on the wire as 16-bit patterns
and surface on the client as float32.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Union

import numpy as np


class dtype:  # noqa: N801 (PyTorch's name)
    """A tensor element type (``tensord.float32``, ``tensord.int64``, ...)."""

    __slots__ = ("name", "proto", "itemsize", "is_floating_point", "is_signed", "numpy_dtype")

    def __init__(self, name: str, proto: int, itemsize: int, is_floating_point: bool,
                 is_signed: bool, numpy_dtype: np.dtype) -> None:
        self.name = name
        self.proto = proto
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        #: the NumPy dtype of downloaded values (float32 for bfloat16)
        self.numpy_dtype = numpy_dtype

    def __repr__(self) -> str:
        return f"tensord.{self.name}"

    def __reduce__(self) -> str:
        return self.name


# Values of the wire enum tensord.v1.DType (checked against the generated stubs in tests).
float32 = dtype("float32", 1, 4, True, True, np.dtype("<f4"))
float64 = dtype("float64", 2, 8, True, True, np.dtype("<f8"))
float16 = dtype("float16", 3, 2, True, True, np.dtype("<f2"))
bfloat16 = dtype("bfloat16", 4, 2, True, True, np.dtype("<f4"))
int64 = dtype("int64", 5, 8, False, True, np.dtype("<i8"))
int32 = dtype("int32", 6, 4, False, True, np.dtype("<i4"))
int8 = dtype("int8", 7, 1, False, True, np.dtype("i1"))
uint8 = dtype("uint8", 8, 1, False, False, np.dtype("u1"))
bool_ = dtype("bool", 9, 1, False, False, np.dtype("?"))

ALL_DTYPES = (float32, float64, float16, bfloat16, int64, int32, int8, uint8, bool_)
BY_PROTO: Dict[int, dtype] = {d.proto: d for d in ALL_DTYPES}
BY_NAME: Dict[str, dtype] = {d.name: d for d in ALL_DTYPES}
_BY_NUMPY: Dict[np.dtype, dtype] = {
    np.dtype(np.float32): float32, np.dtype(np.float64): float64, np.dtype(np.float16): float16,
    np.dtype(np.int64): int64, np.dtype(np.int32): int32, np.dtype(np.int8): int8,
    np.dtype(np.uint8): uint8, np.dtype(np.bool_): bool_,
}


def from_numpy_dtype(np_dtype: Any) -> dtype:
    """The tensord dtype of a NumPy dtype; TypeError if tensord has none."""
    d = _BY_NUMPY.get(np.dtype(np_dtype).newbyteorder("="))
    if d is None:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}; the supported "
                        "types are: float64, float32, float16, int64, int32, int8, uint8, bool")
    return d


def to_wire_bytes(arr: np.ndarray, dt: dtype) -> np.ndarray:
    """``arr`` converted to ``dt``'s wire layout (C-contiguous, little-endian)."""
    if dt is bfloat16:
        f = np.ascontiguousarray(arr, dtype="<f4")
        bits = f.view("<u4").astype(np.uint64)
        # round to nearest even; NaN stays a quiet NaN
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
        rounded[np.isnan(f)] = 0x7FC0
        return rounded
    return np.ascontiguousarray(arr, dtype=dt.numpy_dtype)


def from_wire_bytes(buf: Union[bytes, bytearray], dt: dtype, shape: tuple) -> np.ndarray:
    """A NumPy array of ``shape`` from wire bytes of dtype ``dt`` (bfloat16 → float32)."""
    if dt is bfloat16:
        bits = np.frombuffer(buf, dtype="<u2").astype("<u4") << 16
        return bits.view("<f4").reshape(shape)
    return np.frombuffer(buf, dtype=dt.numpy_dtype).reshape(shape)


class device:  # noqa: N801 (PyTorch's name)
    """Where a tensor lives: ``device('cpu')``, ``device('cuda:0')``, ``device('cuda', 1)``."""

    __slots__ = ("type", "index")

    def __init__(self, type_or_str: Union[str, "device"], index: Optional[int] = None) -> None:
        if isinstance(type_or_str, device):
            self.type, self.index = type_or_str.type, type_or_str.index
            return
        kind, _, idx = str(type_or_str).partition(":")
        if idx:
            if index is not None:
                raise ValueError(f"device string {type_or_str!r} already names an index")
            index = int(idx)
        self.type = kind
        self.index = index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))


def device_str(dev: Union[None, str, device, int]) -> str:
    """The wire spelling of a device argument ("" means the session default)."""
    if dev is None:
        return ""
    if isinstance(dev, int):
        return f"cuda:{dev}"
    s = str(dev)
    return "cuda:0" if s == "cuda" else s


class Size(tuple):
    """A tensor's shape: a tuple of ints, printed like ``tensord.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"tensord.Size({list(self)!r})"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n
