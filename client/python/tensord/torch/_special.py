"""The ATen ops the device handles itself rather than by a catalog rule: copies between the
client and the daemon, reads (the only waits; ``allclose`` among them), fills and random fills
of whole tensors (which bind a lazy payload: Note [Lazy payload]), factories ``*_like``, and
views that need no daemon command (``detach``, ``alias``: the same handle)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from . import _connection, _transfer
from ._direct_numbers import numbers_of
from ._op_table import OpTable
from .._tensor import call as native_call
from ._tensor import TensordTensor, contiguous_strides

aten = torch.ops.aten
HANDLERS = OpTable()


def _handles(*ops: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for op in ops:
            HANDLERS[op] = fn
        return fn
    return register


def _d() -> Any:
    from . import _dispatch
    return _dispatch


def new_lazy(size: Any, dtype: torch.dtype) -> TensordTensor:
    """A tensor whose payload the daemon makes only when needed (Note [Lazy payload])."""
    return TensordTensor(None, tuple(size), contiguous_strides(tuple(size)), 0, dtype)


def _is_tensord(device: Any) -> bool:
    return device is None or torch.device(device).type == "tensord"


def _attrs_dtype(dt: torch.dtype) -> Any:
    return _transfer.native_dtype(dt)


def _session() -> Any:
    return _connection.session()


@_handles(aten.copy_.default)
def copy_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    dst, src = args[0], args[1]
    if not isinstance(dst, TensordTensor):  # download into a CPU tensor
        dst.copy_(_transfer.download(_d().payload(src), src.dtype))
        return dst
    if isinstance(src, TensordTensor):
        s = _d().payload(src)
        if tuple(src.shape) != tuple(dst.shape):
            s = native_call("expand", [s], {"size": list(dst.shape)})
        if dst._td is None and dst._base is None:
            s = (native_call("clone", [s]) if src.dtype == dst.dtype else
                 native_call("to", [s], {"dtype": _attrs_dtype(dst.dtype)}))
            dst._td = s
        else:
            native_call("copy_", [_d().payload(dst), s])
        return dst
    cpu = src.detach().to(dtype=dst.dtype, device="cpu").expand(dst.shape)
    _d().assign(dst, _transfer.upload(_session(), cpu))
    return dst


@_handles(aten.copy.default)
def copy(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """The functional ``copy``: a new tensor of ``self``'s shape, dtype and device holding
    ``src`` (broadcast and cast), as ``copy_`` into a fresh one (``linspace`` of one step)."""
    dst, src = args[0], args[1]
    if not isinstance(dst, TensordTensor):
        out = torch.empty_like(dst)
        return copy_(aten.copy_.default, (out, src), {})
    return copy_(aten.copy_.default, (new_lazy(dst.shape, dst.dtype), src), {})


@_handles(aten.linspace.Tensor_Tensor, aten.linspace.Tensor_Scalar,
          aten.linspace.Scalar_Tensor, aten.logspace.Tensor_Tensor,
          aten.logspace.Tensor_Scalar, aten.logspace.Scalar_Tensor)
def space_tensor(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """``linspace``/``logspace`` with tensor ends: on the device, PyTorch's decomposition (no
    wait); for another device (``device="cpu"``, or none given: PyTorch's default), PyTorch's
    own rule, the ends' values (``item()``, one wait) given to the number overload there."""
    device = kwargs.get("device")
    if device is not None and _is_tensord(device):
        from torch._decomp import decomposition_table
        return decomposition_table[func](*args, **kwargs)
    a = dict(zip(("start", "end", "steps", "base"), args), **kwargs)
    ends = [v.item() if isinstance(v, torch.Tensor) else v for v in (a.pop("start"),
                                                                        a.pop("end"))]
    numbers = getattr(torch, func._schema.name.split("::")[-1])
    return numbers(*ends, **a)


@_handles(aten._to_copy.default)
def to_copy(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = args[0]
    dtype = kwargs.get("dtype") or x.dtype
    if not _is_tensord(kwargs.get("device")):
        out = _transfer.download(_d().payload(x), x.dtype).to(dtype)
        return out.to(kwargs["device"]) if torch.device(kwargs["device"]).type != "cpu" else out
    s = _d().payload(x)
    s = (native_call("clone", [s]) if dtype == x.dtype else
         native_call("to", [s], {"dtype": _attrs_dtype(dtype)}))
    return TensordTensor(s, x.shape, contiguous_strides(x.shape), 0, dtype)


@_handles(aten._local_scalar_dense.default)
def local_scalar_dense(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = args[0]
    return _transfer.download(_d().payload(x), x.dtype).item()


@_handles(aten.allclose.default)
def allclose(func: Any, args: tuple, kwargs: Dict[str, Any]) -> bool:
    """``isclose`` and ``all`` on the daemon, then one read of the answer."""
    a = dict(zip(("self", "other", "rtol", "atol", "equal_nan"), args), **kwargs)
    close = torch.isclose(a["self"], a["other"], rtol=a.get("rtol", 1e-05),
                          atol=a.get("atol", 1e-08), equal_nan=a.get("equal_nan", False))
    return bool(close.all().item())


@_handles(aten.detach.default, aten.alias.default)
def same_handle(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """Views that change nothing the daemon sees: PyTorch's autograd is on the client and the
    daemon records no tape (``_connection``), so the new tensor shares the handle."""
    x = args[0]
    return TensordTensor(_d().payload(x), x.shape, x.stride(), x.storage_offset(), x.dtype)


@_handles(aten.fill_.Scalar, aten.zero_.default)
def fill_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """A new ``full`` payload bound where nothing else sees ``x``'s (Note [Lazy payload]), else
    the daemon's ``zero_`` or ``fill_`` (the number's handle: Note [Number handles]) into it,
    one command where a ``full`` and a ``copy_`` would be two (``zero_grad``'s)."""
    x = args[0]
    value = args[1] if len(args) > 1 else 0
    if x._td is not None or x._base is not None:
        p = _d().payload(x)
        if len(args) == 1:
            native_call("zero_", [p])
            return x
        number = numbers_of(p._session).tensor(value, p._dev)
        if number is not None:
            native_call("fill_", [p, number])
            return x
    _d().assign(x, native_call("full", [], {"shape": list(x.shape), "fill_value": float(value),
                                            "dtype": _attrs_dtype(x.dtype)}, session=_session()))
    return x


@_handles(aten.normal_.default)
def normal_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = args[0]
    mean = kwargs.get("mean", args[1] if len(args) > 1 else 0.0)
    std = kwargs.get("std", args[2] if len(args) > 2 else 1.0)
    v = native_call("randn", [], {"shape": list(x.shape), "dtype": _attrs_dtype(x.dtype)},
                    session=_session())
    if std != 1.0:
        v = native_call("mul", [v, float(std)])
    if mean != 0.0:
        v = native_call("add", [v, float(mean)])
    _d().assign(x, v)
    return x


@_handles(aten.uniform_.default)
def uniform_(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = args[0]
    lo = kwargs.get("from", args[1] if len(args) > 1 else 0.0)
    hi = kwargs.get("to", args[2] if len(args) > 2 else 1.0)
    v = native_call("rand", [], {"shape": list(x.shape), "dtype": _attrs_dtype(x.dtype)},
                    session=_session())
    if hi - lo != 1.0:
        v = native_call("mul", [v, float(hi - lo)])
    if lo != 0.0:
        v = native_call("add", [v, float(lo)])
    _d().assign(x, v)
    return x


@_handles(aten.empty_like.default, aten.empty.memory_format, aten.new_empty.default,
          aten.empty_strided.default, aten.new_empty_strided.default)
def empty_like(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    name = func._schema.name
    if name in ("aten::empty_like",):
        size = args[0].shape
    elif name in ("aten::empty", "aten::empty_strided"):
        size = args[0]
    else:
        size = args[1]
    dtype = kwargs.get("dtype") or (args[0].dtype if isinstance(args[0], torch.Tensor)
                                    else torch.get_default_dtype())
    if not _is_tensord(kwargs.get("device")):
        return torch.empty(size, dtype=dtype, device=kwargs.get("device"))
    return new_lazy(size, dtype)


@_handles(aten.full_like.default)
def full_like(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x, value = args[0], args[1]
    dtype = kwargs.get("dtype") or x.dtype
    if not _is_tensord(kwargs.get("device")):
        return torch.full(x.shape, value, dtype=dtype, device=kwargs.get("device"))
    out = new_lazy(x.shape, dtype)
    out._td = native_call("full", [], {"shape": list(x.shape), "fill_value": float(value),
                                       "dtype": _attrs_dtype(dtype)}, session=_session())
    return out


@_handles(aten.rand_like.default, aten.randn_like.default)
def random_like(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = args[0]
    dtype = kwargs.get("dtype") or x.dtype
    if not _is_tensord(kwargs.get("device")):
        return func(torch.empty(x.shape, dtype=dtype), dtype=dtype)
    name = "rand" if func is aten.rand_like.default else "randn"
    out = new_lazy(x.shape, dtype)
    out._td = native_call(name, [], {"shape": list(x.shape), "dtype": _attrs_dtype(dtype)},
                          session=_session())
    return out


@_handles(aten.equal.default)
def equal(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    a, b = (x.cpu() if isinstance(x, torch.Tensor) else x for x in args[:2])
    return torch.equal(a, b)


# Note [In-place views]: ``squeeze_``, ``unsqueeze_``, ``transpose_``, ``t_``, ``as_strided_``
# change the sizes and strides of the tensor they are called on, not its values (``matmul`` of a
# 1-d tensor ends in ``squeeze_``). The daemon's side is the functional view's handle (same
# storage); PyTorch's side, the wrapper's own metadata, is set below the Python key
# (``as_strided_`` with dispatch off), since no ATen op on it may reach the daemon again.
@_handles(aten.squeeze_.default, aten.squeeze_.dim, aten.squeeze_.dims, aten.unsqueeze_.default,
          aten.transpose_.default, aten.t_.default, aten.as_strided_.default)
def inplace_view(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Any:
    x = args[0]
    twin = aten.transpose.int if func is aten.transpose_.default else _d()._functional_twin(func)
    view = _d().dispatch(twin, args, kwargs)
    x._td = _d().payload(view)
    with torch.utils._mode_utils.no_dispatch():
        aten.as_strided_.default(x, view.shape, view.stride(), view.storage_offset())
    return x

