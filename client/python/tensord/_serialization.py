"""``tensord.save`` / ``tensord.load``: state dicts to a local file as NumPy data.

The file is a NumPy ``.npz`` archive (``np.savez``), readable with NumPy alone:

- ``__manifest__``: a 0-d unicode array holding JSON that describes the saved object: nested
  dicts (str or int keys; ``OrderedDict`` kept), lists, tuples, numbers, strings, None, and
  tensors as ``{"tensor": "t3", "dtype": "float32", "device": "cpu"}``;
- ``t0``, ``t1``, ...: one array per tensor, in the tensor's dtype, except bfloat16, stored as
  its uint16 bit patterns (NumPy has no bfloat16; ``"dtype": "bfloat16"`` says so).

Tensors are downloaded on save (tensord tensors, NumPy arrays and CPU torch tensors all become
arrays) and uploaded to the daemon on load.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import IO, Any, Dict, Optional, Union

import numpy as np

from . import _context, _dtype, _tensor
from ._tensor import Tensor

FORMAT = "tensord.save/1"
_PathOrFile = Union[str, "os.PathLike[str]", IO[bytes]]  # noqa: F821


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    # float32 values that came from bfloat16 are exact: their high 16 bits are the bf16 bits
    return (np.ascontiguousarray(values, dtype="<f4").view("<u4") >> 16).astype("<u2")


def _from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    return (bits.astype("<u4") << 16).view("<f4")


class _Writer:
    def __init__(self) -> None:
        self.arrays: Dict[str, np.ndarray] = {}

    def add(self, arr: np.ndarray, dtype_name: str, device: str) -> Dict[str, Any]:
        key = f"t{len(self.arrays)}"
        self.arrays[key] = arr
        return {"tensor": key, "dtype": dtype_name, "device": device}

    def encode(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            info = obj._meta()
            values = obj.numpy()
            if info.dtype is _dtype.bfloat16:
                values = _bf16_bits(values)
            return self.add(values, info.dtype.name, info.device)
        if isinstance(obj, np.ndarray):
            return self.add(obj, "numpy", "cpu")
        if type(obj).__module__.startswith("torch") and hasattr(obj, "detach"):
            t = obj.detach().cpu()
            name = str(t.dtype).replace("torch.", "")
            if name == "bfloat16":
                return self.add(_bf16_bits(t.float().numpy()), name, "cpu")
            return self.add(t.numpy(), name, "cpu")
        if isinstance(obj, dict):
            kind = "odict" if isinstance(obj, OrderedDict) else "dict"
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise TypeError(f"tensord.save: dict keys must be str or int, got {k!r}")
                items.append([k, self.encode(v)])
            return {kind: items}
        if isinstance(obj, (list, tuple)):
            return {"list" if isinstance(obj, list) else "tuple": [self.encode(v) for v in obj]}
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return {"value": obj}
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return {"value": obj.item()}
        if isinstance(obj, _dtype.dtype):
            return {"dtype": obj.name}
        raise TypeError(f"tensord.save: cannot save a {type(obj).__name__}; state dicts of "
                        "tensors, numbers, strings, lists and dicts are supported")


def save(obj: Any, f: _PathOrFile) -> None:
    """Saves ``obj`` (a state dict: nested dicts/lists of tensors and plain values) to ``f``
    (a path, written exactly as given, or a binary file object)."""
    w = _Writer()
    manifest = {"format": FORMAT, "object": w.encode(obj)}
    arrays = dict(w.arrays)
    arrays["__manifest__"] = np.array(json.dumps(manifest))
    if hasattr(f, "write"):
        np.savez(f, **arrays)  # type: ignore[arg-type]
    else:
        with open(f, "wb") as fh:  # type: ignore[arg-type]
            np.savez(fh, **arrays)


class _Reader:
    def __init__(self, npz: Any, session: Any, map_location: Optional[str]) -> None:
        self.npz = npz
        self.session = session
        self.map_location = map_location

    def device(self, saved: str) -> str:
        if self.map_location is not None:
            return self.map_location
        return saved if saved in self.session.devices else ""

    def decode(self, node: Dict[str, Any]) -> Any:
        if "tensor" in node:
            arr = self.npz[node["tensor"]]
            name = node["dtype"]
            if name == "numpy":
                return arr
            if name == "bfloat16":
                arr = _from_bf16_bits(arr)
            dt = _dtype.BY_NAME[name]
            return _tensor.upload(self.session, arr, dt, self.device(node.get("device", "")))
        if "dict" in node or "odict" in node:
            out = OrderedDict() if "odict" in node else {}
            for k, v in node.get("dict", node.get("odict")):
                out[k] = self.decode(v)
            return out
        if "list" in node:
            return [self.decode(v) for v in node["list"]]
        if "tuple" in node:
            return tuple(self.decode(v) for v in node["tuple"])
        if "value" in node:
            return node["value"]
        if "dtype" in node:
            return _dtype.BY_NAME[node["dtype"]]
        raise ValueError(f"tensord.load: unknown manifest entry {node!r}")


def load(f: _PathOrFile, map_location: Any = None, *, session: Any = None) -> Any:
    """Loads what ``save`` wrote; tensors are uploaded to ``session`` (default: the default
    session) on ``map_location`` if given, else on their saved device when the daemon has it,
    else on its default device. Arrays saved from NumPy come back as NumPy arrays."""
    s = session or _context.default_session()
    loc = _dtype.device_str(map_location) if map_location is not None else None
    with np.load(f, allow_pickle=False) as npz:
        if "__manifest__" not in npz.files:
            raise ValueError("tensord.load: not a file written by tensord.save (no "
                             "__manifest__)")
        manifest = json.loads(str(npz["__manifest__"]))
        if manifest.get("format") != FORMAT:
            raise ValueError(f"tensord.load: unknown format {manifest.get('format')!r}")
        return _Reader(npz, s, loc).decode(manifest["object"])
