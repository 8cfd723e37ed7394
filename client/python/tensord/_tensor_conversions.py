"""Tensor's dtype and device conversions with PyTorch's names: ``to`` (this tensor when nothing
changes, else the daemon's ``to`` op), ``cpu``/``cuda`` and the dtype shorthands ``float`` ...
``bool``. A ``__slots__ = ()`` mixin of ``Tensor`` (``_tensor``)."""

from __future__ import annotations

from typing import Any

from . import _calls, _dtype


class TensorConversions:
    """Mixed into ``Tensor``; see there."""

    __slots__ = ()

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``: this tensor if
        nothing changes, else a converted copy."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        if kwargs:
            raise TypeError(f"to() got unexpected arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _dtype.dtype):
                dtype = a
            elif isinstance(a, _calls.Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, (str, _dtype.device, int)):
                device = a
            else:
                raise TypeError(f"to() got an unexpected argument {a!r}")
        info = self._meta()
        dev = _dtype.device_str(device) or info.device
        dt = dtype or info.dtype
        if dev == info.device and dt is info.dtype and not copy:
            return self
        if "to" in self._session.catalog:
            return _calls.call("to", [self], {"dtype": dt, "device": dev})
        # No conversion op yet: through the client (a download and an upload; values only).
        return _calls.upload(self._session, self.numpy(), dt, dev)

    def cpu(self) -> Any:
        """This tensor on the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Any:
        """This tensor on a CUDA device (``cuda:0`` by default)."""
        return self.to(_dtype.device_str(device if device is not None else "cuda"))

    def type_as(self, other: Any) -> Any:
        """This tensor converted to ``other``'s dtype."""
        return self.to(other.dtype)

    def float(self) -> Any:
        """Converted to float32."""
        return self.to(_dtype.float32)

    def double(self) -> Any:
        """Converted to float64."""
        return self.to(_dtype.float64)

    def half(self) -> Any:
        """Converted to float16."""
        return self.to(_dtype.float16)

    def bfloat16(self) -> Any:
        """Converted to bfloat16."""
        return self.to(_dtype.bfloat16)

    def long(self) -> Any:
        """Converted to int64."""
        return self.to(_dtype.int64)

    def int(self) -> Any:
        """Converted to int32."""
        return self.to(_dtype.int32)

    def char(self) -> Any:
        """Converted to int8."""
        return self.to(_dtype.int8)

    def byte(self) -> Any:
        """Converted to uint8."""
        return self.to(_dtype.uint8)

    def bool(self) -> Any:
        """Converted to bool."""
        return self.to(_dtype.bool_)

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating point type."""
        return self.dtype.is_floating_point
