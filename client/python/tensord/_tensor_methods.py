"""Tensor methods and operators with PyTorch's names and signatures.

Each one maps onto catalog ops through ``_calls.call``; ops the catalog lacks raise
NotImplementedError naming the missing op. Any other catalog op is reachable as a method through
``__getattr__`` (``x.exp()`` once the daemon has ``exp``).
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence

import numpy as np

from . import _calls

_SCALARS = (int, float, bool, np.number, np.bool_)


def _operand(v: Any) -> bool:
    return isinstance(v, (_calls.Tensor, _SCALARS))


def _shape_args(shape: Sequence[Any]) -> list:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all mean the shape [2, 3]."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return [operator.index(s) for s in shape]


def _dims(dim: Any) -> Optional[list]:
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return [operator.index(d) for d in dim]
    return [operator.index(dim)]


class TensorMethods:
    """Mixed into ``Tensor``; see there."""

    __slots__ = ()

    # ------------------------------------------------------------ arithmetic

    def add(self, other: Any, *, alpha: Any = 1) -> Any:
        """``self + alpha * other``."""
        return _calls.call("add", [self, other], {"alpha": None if alpha == 1 else alpha})

    def sub(self, other: Any, *, alpha: Any = 1) -> Any:
        """``self - alpha * other``."""
        return _calls.call("sub", [self, other], {"alpha": None if alpha == 1 else alpha})

    def mul(self, other: Any) -> Any:
        """Elementwise product, with broadcasting."""
        return _calls.call("mul", [self, other])

    def div(self, other: Any, *, rounding_mode: Optional[str] = None) -> Any:
        """Elementwise true division, with broadcasting."""
        return _calls.call("div", [self, other], {"rounding_mode": rounding_mode})

    def matmul(self, other: Any) -> Any:
        """Matrix product (PyTorch's ``matmul`` rules)."""
        return _calls.call("matmul", [self, other])

    def neg(self) -> Any:
        """``-self``."""
        return _calls.call("neg", [self])

    def relu(self) -> Any:
        """``max(self, 0)`` elementwise."""
        return _calls.call("relu", [self])

    def pow(self, exponent: Any) -> Any:
        """``self ** exponent`` elementwise."""
        return _calls.call("pow", [self, exponent])

    multiply, subtract, divide, negative, true_divide = mul, sub, div, neg, div

    __add__ = _calls.binary_method("add")

    def __radd__(self, other: Any) -> Any:
        return _calls.binary("add", other, self)

    __sub__ = _calls.binary_method("sub")

    def __rsub__(self, other: Any) -> Any:
        return _calls.binary("sub", other, self)

    __mul__ = _calls.binary_method("mul")

    def __rmul__(self, other: Any) -> Any:
        return _calls.binary("mul", other, self)

    __truediv__ = _calls.binary_method("div")

    def __rtruediv__(self, other: Any) -> Any:
        return _calls.binary("div", other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _calls.call("div", [self, other], {"rounding_mode": "floor"}) \
            if _operand(other) else NotImplemented

    __mod__ = _calls.binary_method("remainder")

    __matmul__ = _calls.binary_method("matmul")

    def __rmatmul__(self, other: Any) -> Any:
        return _calls.binary("matmul", other, self)

    __pow__ = _calls.binary_method("pow")

    def __rpow__(self, other: Any) -> Any:
        return _calls.binary("pow", other, self)

    def __neg__(self) -> Any:
        return _calls.call("neg", [self])

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return _calls.call("abs", [self])

    def __invert__(self) -> Any:
        return _calls.call("bitwise_not", [self])

    __and__ = _calls.binary_method("bitwise_and")

    __or__ = _calls.binary_method("bitwise_or")

    __xor__ = _calls.binary_method("bitwise_xor")

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    # comparisons: elementwise bool tensors, as in PyTorch
    __eq__ = _calls.binary_method("eq")

    __ne__ = _calls.binary_method("ne")

    __lt__ = _calls.binary_method("lt")

    __le__ = _calls.binary_method("le")

    __gt__ = _calls.binary_method("gt")

    __ge__ = _calls.binary_method("ge")

    # in place: the catalog's in-place op when it has one; otherwise the name is rebound to a
    # new tensor (other references to the old one keep the old value)
    def _inplace(self, name: str, other: Any) -> Any:
        if not _operand(other):
            return NotImplemented
        if name + "_" in self._session.catalog:
            _calls.call(name + "_", [self, other])
            return self
        return _calls.call(name, [self, other])

    def __iadd__(self, other: Any) -> Any:
        return self._inplace("add", other)

    def __isub__(self, other: Any) -> Any:
        return self._inplace("sub", other)

    def __imul__(self, other: Any) -> Any:
        return self._inplace("mul", other)

    def __itruediv__(self, other: Any) -> Any:
        return self._inplace("div", other)

    # ------------------------------------------------------------ reductions

    def sum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """Sum over ``dim`` (an int or a tuple; None: every dimension)."""
        return _calls.call("sum", [self], {"dim": _dims(dim), "keepdim": keepdim or None,
                                            "dtype": dtype})

    def mean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
        """Mean over ``dim`` (an int or a tuple; None: every dimension)."""
        return _calls.call("mean", [self], {"dim": _dims(dim), "keepdim": keepdim or None,
                                             "dtype": dtype})

    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The largest element; over ``dim``: ``(values, indices)``; with a tensor: the
        elementwise maximum."""
        from ._multi_ops import max
        return max(self, dim, keepdim)  # type: ignore[arg-type]

    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        """The smallest element; over ``dim``: ``(values, indices)``; with a tensor: the
        elementwise minimum."""
        from ._multi_ops import min
        return min(self, dim, keepdim)  # type: ignore[arg-type]

    def cummax(self, dim: int) -> Any:
        """``(values, indices)`` of the running maximum along ``dim``."""
        from ._scan_ops import cummax
        return cummax(self, dim)  # type: ignore[arg-type]

    def cummin(self, dim: int) -> Any:
        """``(values, indices)`` of the running minimum along ``dim``."""
        from ._scan_ops import cummin
        return cummin(self, dim)  # type: ignore[arg-type]

    def mode(self, dim: int = -1, keepdim: bool = False) -> Any:
        """``(values, indices)``: the most frequent value along ``dim`` and its last index."""
        from ._scan_ops import mode
        return mode(self, dim, keepdim)  # type: ignore[arg-type]

    # ------------------------------------------------- several outputs, indexing

    def split(self, split_size: Any, dim: int = 0) -> Any:
        """Views of pieces of ``dim`` (a size, or a list of sizes)."""
        from ._multi_ops import split
        return split(self, split_size, dim)  # type: ignore[arg-type]

    def chunk(self, chunks: int, dim: int = 0) -> Any:
        """Views of at most ``chunks`` equal pieces of ``dim``."""
        from ._multi_ops import chunk
        return chunk(self, chunks, dim)  # type: ignore[arg-type]

    def unbind(self, dim: int = 0) -> Any:
        """Views of each slice along ``dim``."""
        from ._multi_ops import unbind
        return unbind(self, dim)  # type: ignore[arg-type]

    def gather(self, dim: int, index: Any) -> Any:
        """``torch.gather(self, dim, index)``."""
        return _calls.call("gather", [self, index], {"dim": dim})

    def scatter(self, dim: int, index: Any, src: Any = None, *, value: Any = None) -> Any:
        """``torch.scatter(self, dim, index, src)``."""
        from ._multi_ops import scatter
        return scatter(self, dim, index, src, value=value)  # type: ignore[arg-type]

    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        """``torch.scatter_add(self, dim, index, src)``."""
        return _calls.call("scatter_add", [self, index, src], {"dim": dim})

    def scatter_reduce(self, dim: int, index: Any, src: Any, reduce: str, *,
                       include_self: bool = True) -> Any:
        """``torch.scatter_reduce(self, dim, index, src, reduce, include_self=...)``."""
        return _calls.call("scatter_reduce", [self, index, src],
                           {"dim": dim, "reduce": reduce, "include_self": include_self})

    def index_reduce(self, dim: int, index: Any, source: Any, reduce: str, *,
                     include_self: bool = True) -> Any:
        """``Tensor.index_reduce``: ``source``'s slices along ``dim`` reduced (``"prod"``,
        ``"mean"``, ``"amax"``, ``"amin"``) into the slices of self that ``index`` names."""
        return _calls.call("index_reduce", [self, index, source],
                           {"dim": dim, "reduce": reduce, "include_self": include_self})

    def index_select(self, dim: int, index: Any) -> Any:
        """Entries at ``index`` along ``dim``."""
        return _calls.call("index_select", [self, index], {"dim": dim})

    # ---------------------------------------------------------- shape and views

    def reshape(self, *shape: Any) -> Any:
        """The same values with a new shape (one dimension may be -1)."""
        return _calls.call("reshape", [self], {"shape": _shape_args(shape)})

    def view(self, *shape: Any) -> Any:
        """A view with a new shape (``reshape`` where the daemon has no ``view`` op)."""
        name = "view" if "view" in self._session.catalog else "reshape"
        return _calls.call(name, [self], {"shape": _shape_args(shape)})

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Flattens dimensions ``start_dim..end_dim`` into one: the daemon's ``flatten`` when it
        has one (the client need not wait for the shape of a result still being computed)."""
        if "flatten" in self._session.catalog:
            return _calls.call("flatten", [self], {"start_dim": start_dim, "end_dim": end_dim})
        shape = list(self.shape)
        if not shape:
            return self.reshape(1)
        s = _calls._wrap_dim(start_dim, len(shape))
        e = _calls._wrap_dim(end_dim, len(shape))
        if s > e:
            raise ValueError("flatten() has invalid args: start_dim cannot come after end_dim")
        n = 1
        for d in shape[s:e + 1]:
            n *= d
        return self.reshape(shape[:s] + [n] + shape[e + 1:])

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Swaps dimensions ``dim0`` and ``dim1``."""
        return _calls.call("transpose", [self], {"dim0": dim0, "dim1": dim1})

    swapaxes = swapdims = transpose

    def t(self) -> Any:
        """Transpose of a tensor of at most 2 dimensions."""
        n = self.dim()
        if n > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
        return self if n < 2 else self.transpose(0, 1)

    @property
    def T(self) -> Any:  # noqa: N802 (PyTorch's name)
        """The tensor with its dimensions reversed."""
        n = self.dim()
        if n <= 2:
            return self.t()
        return _calls.call("permute", [self], {"dims": list(range(n - 1, -1, -1))})

    @property
    def mT(self) -> Any:  # noqa: N802
        """Transpose of the last two dimensions."""
        return self.transpose(-2, -1)

    def contiguous(self) -> Any:
        """A contiguous tensor with the same values (this tensor when the daemon has no
        ``contiguous`` op: it makes operands contiguous where a kernel needs it)."""
        if "contiguous" in self._session.catalog:
            return _calls.call("contiguous", [self])
        return self

    def __getitem__(self, index: Any) -> Any:
        from ._indexing import getitem
        return getitem(self, index)

    # ------------------------------------------------------- every other op

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            s = object.__getattribute__(self, "_session")
        except AttributeError:
            raise AttributeError(name) from None
        op = s.catalog.get(name)
        if op is None or op.max_inputs == 0:
            raise AttributeError(f"'Tensor' object has no attribute '{name}' (nor is '{name}' "
                                 "an op in the daemon's catalog)")
        from ._catalog_function import CatalogFunction  # imports _tensor, which imports this

        return CatalogFunction(name, bound=self)  # type: ignore[arg-type]

    def __dir__(self) -> Any:
        names = set(super().__dir__())
        names.update(n for n, op in self._session.catalog.items() if op.max_inputs != 0)
        return sorted(names)
