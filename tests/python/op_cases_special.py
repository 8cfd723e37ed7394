"""Reference cases of torch.special's rows (Bessel, Airy, normal-distribution and
orthogonal-polynomial functions) and of nonzero_static, for test_ops_reference.py (values) and
test_autograd_reference.py (gradients of the differentiable ones: i0, i0e, i1, i1e, ndtri,
log_ndtr, erfcx)."""

from __future__ import annotations

from typing import List

import torch

from op_case_inputs import NC, Case, R

F64 = torch.float64
# Unary rows: (name, torch's function, input maker(shape..., dtype)).
_ANY = lambda *s, dtype=torch.float32: R(*s, dtype=dtype) * 3  # noqa: E731
_POSITIVE = lambda *s, dtype=torch.float32: R(*s, lo=0.2, dtype=dtype)  # noqa: E731
# erfcx grows as exp(x^2) for negative x: kept near zero, where a float64 loss leaves finite
# differences their digits.
_NEAR_ZERO = lambda *s, dtype=torch.float32: R(*s, dtype=dtype)  # noqa: E731
_PROBABILITY = lambda *s, dtype=torch.float32: torch.sigmoid(R(*s, dtype=dtype))  # noqa: E731
UNARY = [
    ("i0", torch.i0, _ANY), ("i0e", torch.special.i0e, _ANY), ("i1", torch.special.i1, _ANY),
    ("i1e", torch.special.i1e, _ANY), ("ndtri", torch.special.ndtri, _PROBABILITY),
    ("log_ndtr", torch.special.log_ndtr, _ANY), ("erfcx", torch.special.erfcx, _NEAR_ZERO),
    ("bessel_j0", torch.special.bessel_j0, _ANY), ("bessel_j1", torch.special.bessel_j1, _ANY),
    ("bessel_y0", torch.special.bessel_y0, _POSITIVE),
    ("bessel_y1", torch.special.bessel_y1, _POSITIVE),
    ("modified_bessel_i0", torch.special.modified_bessel_i0, _ANY),
    ("modified_bessel_i1", torch.special.modified_bessel_i1, _ANY),
    ("modified_bessel_k0", torch.special.modified_bessel_k0, _POSITIVE),
    ("modified_bessel_k1", torch.special.modified_bessel_k1, _POSITIVE),
    ("scaled_modified_bessel_k0", torch.special.scaled_modified_bessel_k0, _POSITIVE),
    ("scaled_modified_bessel_k1", torch.special.scaled_modified_bessel_k1, _POSITIVE),
    ("spherical_bessel_j0", torch.special.spherical_bessel_j0, _ANY),
    ("airy_ai", torch.special.airy_ai, _ANY),
]
# PyTorch's own float64 errors (against mpmath) where tensord's are ~1e-15: its J0/J1 ~3e-6
# (relative) for 5 < |x| < 9; its airy_ai up to 6.4e-6 of Ai's envelope for -10 < x < -2.09 (its
# port of Cephes evaluates two p1evl denominators as polevl; Note [Airy sources] in
# runtime/core/airy_math.h): 4e-8 relative on these inputs.
_F64_RTOL = {"bessel_j0": 1e-5, "bessel_j1": 1e-5, "airy_ai": 1e-6}
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


def _nonzero_static(x: torch.Tensor, size: int, fill_value: int = -1) -> torch.Tensor:
    """torch.nonzero_static's documented result (PyTorch 1.13 lacks it): nonzero's first
    ``size`` rows, padded with ``fill_value``."""
    nz = torch.nonzero(x)[:size]
    pad = torch.full((size - nz.shape[0], x.dim()), fill_value, dtype=torch.int64)
    return torch.cat([nz, pad])


def special_cases() -> List[Case]:
    c: List[Case] = []
    for name, ref, make in UNARY:
        c += [Case(name, [make(3, 4)], ref=ref), Case(name, [NC(make(4, 5))], ref=ref),
              Case(name, [make(6, dtype=F64)], ref=ref, rtol=_F64_RTOL.get(name))]
    # Ai far out on both sides: float32 over [-100, 100] (PyTorch computes it in float32,
    # tensord in double and rounds: they agree within float32's tolerance there), float64 on
    # either side of PyTorch's error band (-10, -2.09), PyTorch's special values, an int64 input.
    inf, nan = float("inf"), float("nan")
    ai = torch.special.airy_ai
    c += [Case("airy_ai", [torch.linspace(-100, 100, 401)], ref=ai),
          Case("airy_ai", [torch.linspace(-100, -10, 181, dtype=F64)], ref=ai),
          Case("airy_ai", [torch.linspace(-2.05, 100, 203, dtype=F64)], ref=ai),
          Case("airy_ai", [torch.tensor([inf, -inf, nan, 103.5, 103.9, 200.0, -0.0], dtype=F64)],
               ref=ai),
          Case("airy_ai", [torch.tensor([-3, -1, 0, 1, 2, 7])], ref=ai)]
    x = torch.tanh(R(4, 5, dtype=F64)) * 0.95  # inside [-1, 1]; [0, 1] for the shifted ones
    n = torch.arange(20, dtype=F64).reshape(4, 5) % 7 - 1  # degrees -1..5 (-1 gives 0)
    for name in POLYNOMIALS:
        ref = getattr(torch.special, name)
        xs = (x + 1) / 2 if name.startswith("shifted") else x
        c += [Case(name, [xs, n], ref=ref), Case(name, [xs.float(), n.float()], ref=ref),
              Case(name, [NC(xs.float()), 3.0], ref=ref)]
    mask = R(3, 4, dtype=torch.int64) % 3
    c += [Case("nonzero_static", [mask], {"size": 5}, ref=_nonzero_static),
          Case("nonzero_static", [NC(mask.float())], {"size": 12, "fill_value": 7},
               ref=_nonzero_static),
          Case("nonzero_static", [R(2, 3, dtype=torch.bool)], {"size": 0}, ref=_nonzero_static)]
    return c
