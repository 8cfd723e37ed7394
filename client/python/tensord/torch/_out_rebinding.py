"""out= forms whose PyTorch composite does not write ``out`` on the device.

Note [Rebound out=]: for a tensor subclass (every tensord tensor is one, through
``__torch_dispatch__``), some CompositeImplicitAutograd out= kernels take their
composite-compliant branch, compute the functional result and assign it to the C++ ``Tensor&``
parameter (``result = at::sum(...)``): that rebinds the local handle and leaves the caller's
``out`` as it was, uninitialised memory for an ``empty`` one (``linalg.matrix_rank(x, out=o)``
read back whatever the allocator held: a different value every run). The same happens on the
CPU under a Python dispatch mode. These kernels, registered on AutogradPrivateUse1 (ahead of
the composite), run the functional form and copy it into ``out``, resized as PyTorch's
``resize_output`` does.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

aten = torch.ops.aten


def _into(out: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    if out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got "
                           f"{out.dtype} instead")
    if out.shape != result.shape:
        out.resize_(result.shape)
    return out.copy_(result)


def _written(functional: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def kernel(*args: Any, out: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return _into(out, functional(*args, **kwargs))
    return kernel


_KERNELS = {
    "linalg_matrix_rank.atol_rtol_tensor_out": _written(aten.linalg_matrix_rank.atol_rtol_tensor),
    "linalg_matrix_rank.atol_rtol_float_out": _written(aten.linalg_matrix_rank.atol_rtol_float),
    "linalg_matrix_rank.out": _written(aten.linalg_matrix_rank.default),
    "linalg_matrix_rank.out_tol_tensor": _written(aten.linalg_matrix_rank.tol_tensor),
}


def register(lib: "torch.library.Library") -> None:
    """Gives the out= forms of Note [Rebound out=] the device's kernels."""
    for name, kernel in _KERNELS.items():
        lib.impl(name, kernel, "AutogradPrivateUse1")
