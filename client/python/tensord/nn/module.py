"""``Module``: the base of layers and models, as ``torch.nn.Module`` (the containers are in
``containers.py``).

Parameters and buffers are daemon tensors held by handle; a module only records their names.
``state_dict()`` hands back detached aliases (no copy), ``load_state_dict()`` writes values in
place with ``copy_`` under ``no_grad`` (from tensord tensors, NumPy arrays, or anything with
``.numpy()`` such as CPU torch tensors), so optimizers holding the parameters stay valid.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Set, Tuple

import numpy as np

from .. import _dtype, _grad, _tensor
from .._tensor import Tensor
from .parameter import Parameter


class _IncompatibleKeys(NamedTuple):
    missing_keys: List[str]
    unexpected_keys: List[str]


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and type(value).__module__.startswith("torch"):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def value_like(target: Tensor, value: Any) -> Tensor:
    """``value`` as a daemon tensor with ``target``'s dtype and device (uploading host data)."""
    if isinstance(value, Tensor):
        return value
    info = target._meta()
    return _tensor.upload(target._session, _to_numpy(value), info.dtype, info.device)


class Module:
    """Base class of every layer and model: subclass it, assign parameters, buffers and
    submodules as attributes in ``__init__``, and write ``forward``."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; subclasses define it. Call the module, not ``forward``."""
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ attributes

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError("cannot assign before Module.__init__() call")
        params, buffers, modules = d["_parameters"], d["_buffers"], d["_modules"]
        if isinstance(value, Parameter):
            if name not in params:
                self._remove(name)
            params[name] = value
        elif isinstance(value, Module):
            if name not in modules:
                self._remove(name)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(tensord.nn.Parameter or None expected)")
            params[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(tensord Tensor or None expected)")
            buffers[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (tensord.nn.Module or None expected)")
            modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def _remove(self, name: str) -> None:
        d = self.__dict__
        d.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            d[store].pop(name, None)
        d["_non_persistent"].discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if name in d[store]:
                del d[store][name]
                d["_non_persistent"].discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Adds a parameter (or a None placeholder) under ``name``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (tensord.nn.Parameter or None required)")
        self._remove(name)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Optional[Tensor],
                        persistent: bool = True) -> None:
        """Adds a buffer: module state that is not a parameter (e.g. BatchNorm's running
        mean); in ``state_dict()`` unless ``persistent=False``."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (tensord Tensor or None required)")
        self._remove(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Optional["Module"]) -> None:
        """Adds a submodule under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._remove(name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target``."""
        mod = self
        for item in target.split(".") if target else []:
            mod = getattr(mod, item)
        return mod

    # ------------------------------------------------------------- iteration

    def named_modules(self, memo: Optional[Set["Module"]] = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[Tuple[str, "Module"]]:
        """(name, module) for this module and every submodule, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        """This module and every submodule."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[Tuple[str, "Module"]]:
        """(name, module) of the direct submodules."""
        seen: Set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        """The direct submodules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[Tuple[str, Tensor]]:
        seen: Set[int] = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mprefix, m in mods:
            for name, v in getattr(m, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mprefix}.{name}" if mprefix else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[Tuple[str, Parameter]]:
        """(dotted name, parameter), each parameter once."""
        return self._named_members("_parameters", prefix, recurse,  # type: ignore[return-value]
                                   remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, once (what optimizers take)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[Tuple[str, Tensor]]:
        """(dotted name, buffer)."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Module":
        """``copy.deepcopy``: new daemon tensors for parameters and buffers (see _clone)."""
        from ._clone import clone_module
        return clone_module(self, memo)

    # ------------------------------------------------------------------ state

    def state_dict(self, destination: Optional[Dict[str, Any]] = None, prefix: str = "",
                   keep_vars: bool = False) -> Dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, as detached aliases (the values
        stay in the daemon; ``tensord.save`` downloads them)."""
        out: Dict[str, Any] = OrderedDict() if destination is None else destination
        for mprefix, m in self.named_modules(prefix=prefix.rstrip(".")):
            for name, v in m._parameters.items():
                if v is not None:
                    out[f"{mprefix}.{name}" if mprefix else name] = v if keep_vars else v.detach()
            for name, v in m._buffers.items():
                if v is not None and name not in m._non_persistent:
                    out[f"{mprefix}.{name}" if mprefix else name] = v if keep_vars else v.detach()
        return out

    def load_state_dict(self, state_dict: Dict[str, Any], strict: bool = True
                        ) -> _IncompatibleKeys:
        """Copies values into this module's parameters and buffers in place. Values may be
        tensord tensors, NumPy arrays or CPU torch tensors; shapes must match."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict and (missing or unexpected):
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.append("Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        pairs = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            value = state_dict[k]
            vshape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
            if tuple(vshape) != tuple(target.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{list(vshape)} from checkpoint, the shape in current model is "
                              f"{list(target.shape)}.")
                continue
            pairs.append((target, value))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with _grad.no_grad():
            for target, value in pairs:
                _tensor.call("copy_", [target, value_like(target, value)])
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ modes

    def train(self, mode: bool = True) -> "Module":
        """Training mode (dropout active, batch norm on batch statistics) for this module and
        its submodules."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Sets ``requires_grad`` of every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the parameters' gradients (None by default; zeros with
        ``set_to_none=False``)."""
        from ..autograd import zero_grads
        zero_grads(list(self.parameters()), set_to_none)

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Calls ``fn`` on every submodule (children first), then on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---------------------------------------------------------- dtype, device

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is not None:
                    with _grad.no_grad():
                        new = fn(p)
                    if new is not p:
                        m._parameters[name] = Parameter._adopt(new, p.requires_grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """Moves/converts parameters and buffers (``to(device)``, ``to(dtype)``); only floating
        point values change dtype. Create optimizers after moving the model."""
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            else:
                device = a

        def convert(t: Tensor) -> Tensor:
            dt = dtype if dtype is not None and t.dtype.is_floating_point else None
            return t.to(device=device, dtype=dt)
        return self._apply(convert)

    def cuda(self, device: Any = None) -> "Module":
        """Moves everything to a CUDA device."""
        return self.to(_dtype.device_str(device if device is not None else "cuda"))

    def cpu(self) -> "Module":
        """Moves everything to the CPU."""
        return self.to("cpu")

    def float(self) -> "Module":
        """Floating point parameters and buffers to float32."""
        return self.to(_dtype.float32)

    def double(self) -> "Module":
        """Floating point parameters and buffers to float64."""
        return self.to(_dtype.float64)

    def half(self) -> "Module":
        """Floating point parameters and buffers to float16."""
        return self.to(_dtype.float16)

    # ---------------------------------------------------------------- repr

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr``."""
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {sub}")
        if not lines:
            return f"{type(self).__name__}()"
        if len(lines) == 1 and not self._modules:
            return f"{type(self).__name__}({lines[0]})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))
