"""``repr(tensor)`` the way PyTorch prints it (a port of ``torch/_tensor_str.py``, 1.13).

It works on the downloaded NumPy values, so a tensord tensor and a torch tensor with the same
values, dtype and device print the same text, with ``tensord.`` where torch prints ``torch.``.
"""

from __future__ import annotations

import math
from typing import List

import numpy as np

from . import _dtype

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80


class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        absd = np.abs(vals).astype(np.float64)
        vmin, vmax = absd.min(), absd.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        pylist = vals.tolist()
        if self.int_mode:
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                self.sci_mode = True
                self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}e}") for v in pylist])
            else:
                self.max_width = max([self.max_width] + [len(f"{v:.0f}") + 1 for v in pylist])
        elif vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
            self.sci_mode = True
            self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}e}") for v in pylist])
        else:
            self.max_width = max([self.max_width] + [len(f"{v:.{PRECISION}f}") for v in pylist])

    def format(self, value: object) -> str:
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):  # type: ignore[arg-type]
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = str(value)
        return (self.max_width - len(ret)) * " " + ret


def _vector_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / element_length)))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows: List[str] = ([_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)]
                           + ["..."]
                           + [_tensor_str(a[i], indent + 1, summarize, fmt)
                              for i in range(n - EDGEITEMS, n)])
    else:
        rows = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _summarized(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]]) if a.shape[0] > 2 * EDGEITEMS else a
    rows = list(a)
    if a.shape[0] > 2 * EDGEITEMS:
        rows = rows[:EDGEITEMS] + rows[-EDGEITEMS:]
    return np.stack([_summarized(r) for r in rows])


def _add_suffixes(text: str, suffixes: List[str], indent: int) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(values: np.ndarray, dtype: "_dtype.dtype", device: str,
                  requires_grad: bool = False, prefix: str = "tensor(",
                  grad_fn: str = "") -> str:
    """The text PyTorch prints for a tensor with these values, dtype and device."""
    indent = len(prefix)
    suffixes = []
    if device.split(":")[0] != "cpu":
        suffixes.append(f"device='{device}'")
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        if dtype is not _dtype.float32:
            suffixes.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if dtype not in (_dtype.float32, _dtype.int64, _dtype.bool_):
            suffixes.append(f"dtype={dtype!r}")
        if values.dtype == np.float16:
            values = values.astype(np.float32)
        summarize = values.size > THRESHOLD
        fmt = _Formatter(_summarized(values) if summarize else values, dtype.is_floating_point)
        body = _tensor_str(values, indent, summarize, fmt)
    if grad_fn:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
