"""ATen's and PyTorch's prims' math overloads mapped onto the daemon's catalog (the rest of
``_aten_map``'s table; same conventions): unary and binary maps, reductions that
``torch._refs`` writes in prims, scans."""

from __future__ import annotations

import math
from typing import Any

import torch

from ._aten_map import c, rule, same_name, torch_args
from ._aten_map_nn import _fused_rows
from ._transfer import native_dtype

aten = torch.ops.aten
prims = torch.ops.prims

# prims the references decompose into (max/min over all elements, isclose: bitwise ops on
# bools; round(decimals=d): round of a scaled tensor).
for _n in ["bitwise_and", "bitwise_or", "bitwise_xor", "round"]:
    same_name(_n, getattr(prims, _n).default)


@rule(prims.prod.default)
def _prims_prod(inp: Any, dims: Any, *, output_dtype: Any = None) -> Any:
    return c("prod", [inp], dim=None if dims is None else list(dims), dtype=output_dtype)


@rule(aten.cumprod.default)
def _cumprod(self: Any, dim: int, *, dtype: Any = None) -> Any:
    return c("cumprod", [self], dim=dim, dtype=dtype)


# ---------------------------------------------------------------- unary and binary maps
_UNARY = ["tan", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "log2",
          "log10", "exp2", "erfc", "erfinv", "lgamma", "digamma", "signbit"]
for _n in _UNARY:
    same_name(_n, getattr(aten, _n).default)
    same_name(_n, getattr(prims, "erf_inv" if _n == "erfinv" else _n).default)
for _n in ["fmax", "fmin", "hypot", "nextafter"]:
    same_name(_n, getattr(aten, _n).default, getattr(prims, _n).default)
same_name("fmod", aten.fmod.Tensor, aten.fmod.Scalar, prims.fmod.default)
same_name("copysign", aten.copysign.Tensor, aten.copysign.Scalar)
same_name("zeta", aten.special_zeta.default, aten.special_zeta.other_scalar,
          aten.special_zeta.self_scalar, prims.zeta.default)

# torch.special's Bessel, Airy and normal-distribution functions: the daemon's rows drop the
# "special_" prefix (as zeta); prims spell the Bessel ones bessel_*.
same_name("i0", aten.i0.default, prims.bessel_i0.default)
for _n in ["i0e", "i1", "i1e"]:
    same_name(_n, getattr(aten, "special_" + _n).default, getattr(prims, "bessel_" + _n).default)
for _n in ["bessel_j0", "bessel_j1", "spherical_bessel_j0"]:
    same_name(_n, getattr(aten, "special_" + _n).default, getattr(prims, _n).default)
for _n in ["ndtri", "log_ndtr", "erfcx", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai"]:
    same_name(_n, getattr(aten, "special_" + _n).default)
# The orthogonal polynomials p_n(x): x and n each a tensor or a number.
for _n in ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]:
    _op = getattr(aten, "special_" + _n)
    same_name(_n, _op.default, _op.x_scalar, _op.n_scalar)


_SCALAR_TYPE_NAMES = {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short",
                      torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool"}


def _incomplete_gamma(name: str) -> Any:
    """The regularized incomplete gamma functions (special.gammainc/gammaincc reach them).
    Integer and bool operands alone raise PyTorch's CPU error (its refs decomposition, which a
    declining rule would reach, computes them in float32 instead)."""
    @torch_args
    def fn(targs: tuple, self: Any, other: Any) -> Any:
        dtype = torch.result_type(*targs)
        if not dtype.is_floating_point:
            raise NotImplementedError(
                f'"{name}_cpu" not implemented for \'{_SCALAR_TYPE_NAMES.get(dtype, dtype)}\'')
        return c(name, [self, other])
    return fn


for _n in ["igamma", "igammac"]:
    rule(getattr(aten, _n).default, getattr(prims, _n).default)(_incomplete_gamma(_n))


@rule(aten.frexp.Tensor, *([prims.frexp.default] if hasattr(prims, "frexp") else []))
@torch_args
def _frexp(targs: tuple, self: Any) -> Any:
    """(mantissa, int32 exponent) from the daemon's CPU row; integer inputs (PyTorch's error)
    and CUDA daemons (no kernel: KnownCpuOnly) decline to PyTorch's CPU kernel."""
    if not targs[0].is_floating_point() or not _fused_rows():
        return NotImplemented
    return tuple(c("frexp", [self]))


@rule(aten.polygamma.default)
def _polygamma(n: int, self: Any) -> Any:
    return c("polygamma", [self], n=n)


@rule(prims.view_of.default)
@torch_args
def _view_of(targs: tuple, a: Any) -> Any:
    return c("view", [a], shape=list(targs[0].shape))


@rule(aten.angle.default)
@torch_args
def _angle(targs: tuple, self: Any) -> Any:
    """Real inputs: pi where negative, 0 elsewhere (-0.0 included), NaN kept; integer and bool
    inputs give the default float dtype (PyTorch's int-to-float promotion). Its gradient is
    zero (PyTorch's angle_backward for real inputs: zeros_like, on the daemon)."""
    x = targs[0]
    if x.is_complex():
        return NotImplemented
    dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
    v = self if dtype == x.dtype else c("to", [self], dtype=native_dtype(dtype))
    pi = c("full", [], shape=list(x.shape), fill_value=math.pi, dtype=native_dtype(dtype))
    r = c("where", [c("lt", [v, 0]), pi, c("mul", [pi, 0])])
    return c("where", [c("ne", [v, v]), v, r])
