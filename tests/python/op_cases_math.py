"""Reference cases of the math rows, for test_ops_reference.py and test_autograd_reference.py
(through op_cases.py): trigonometric, hyperbolic, logarithmic and special functions on inputs
inside each function's domain, the elementwise pairs fmax/fmin, hypot, copysign, nextafter,
fmod, zeta and igamma/igammac, and frexp."""

from __future__ import annotations

from typing import Any, List

import torch

from op_case_inputs import BROADCAST_SHAPES, NC, Case, R


def math_cases() -> List[Case]:
    """The trigonometric, hyperbolic, logarithmic and special-function rows, on inputs inside
    each function's domain (away from poles, so finite differences hold)."""
    unit = lambda *s, seed=0, dtype=torch.float32: (  # noqa: E731 (values in (-0.9, 0.9))
        torch.tanh(R(*s, seed=seed, dtype=torch.float64)) * 0.9).to(dtype)
    f64 = torch.float64
    c: List[Case] = []
    for op in ["atan", "sinh", "cosh", "asinh", "exp2", "erfc"]:
        c += [Case(op, [R(3, 4)]), Case(op, [NC(R(4, 5))]), Case(op, [R(5, dtype=f64)])]
    for op in ["asin", "acos", "atanh", "erfinv", "tan"]:
        c += [Case(op, [unit(3, 4)]), Case(op, [NC(unit(4, 5))]), Case(op, [unit(5, dtype=f64)])]
    for op in ["log2", "log10", "lgamma", "digamma"]:
        c += [Case(op, [R(3, 4, lo=0.5)]), Case(op, [NC(R(4, 3, lo=0.5))]),
              Case(op, [R(5, lo=0.5, dtype=f64)])]
    for op in ["tan", "exp2", "log2", "lgamma", "digamma", "erfc"]:  # integers: float32
        c.append(Case(op, [R(6, dtype=torch.int64).abs() % 2 + 1]))
    c += [Case("acosh", [R(3, 4, lo=1.1)]), Case("acosh", [R(5, lo=1.1, dtype=f64)]),
          Case("lgamma", [torch.tensor([-0.5, -2.5, 0.25])]),
          Case("digamma", [torch.tensor([-0.5, -2.5, 0.25, 10.0], dtype=f64)]),
          Case("polygamma", [R(3, 4, lo=0.5)], {"n": 1}, ref=lambda x, n: torch.polygamma(n, x)),
          Case("polygamma", [R(5, lo=0.5, dtype=f64)], {"n": 3},
               ref=lambda x, n: torch.polygamma(n, x)),
          Case("polygamma", [NC(R(4, 3, lo=0.5))], {"n": 0},
               ref=lambda x, n: torch.polygamma(n, x)),
          Case("signbit", [torch.tensor([-0.0, 0.0, -1.5, 2.0])]),
          Case("signbit", [R(6, dtype=torch.int64)])]
    for op in ["fmax", "fmin", "hypot", "copysign", "nextafter"]:
        for a, b in BROADCAST_SHAPES[:3]:
            c.append(Case(op, [R(*a), R(*b, seed=1)]))
        c.append(Case(op, [R(4, dtype=f64), R(4, seed=2, dtype=f64)]))
    nan = float("nan")
    def same_nans(got: Any, want: Any) -> None:  # forward only: no finite differences at NaN
        torch.testing.assert_close(torch.from_numpy(got.numpy()), want, equal_nan=True)
    c += [Case("fmax", [torch.tensor([1.0, nan, nan]), torch.tensor([nan, 2.0, nan])],
               check=same_nans),
          Case("fmin", [torch.tensor([1.0, nan, nan]), torch.tensor([nan, 2.0, nan])],
               check=same_nans),
          Case("fmax", [R(6, dtype=torch.int64), R(6, dtype=torch.int64, seed=1)]),
          # bool: or / and, as PyTorch's maximum / minimum; with int64 they promote.
          Case("fmax", [R(3, 4, dtype=torch.bool), R(4, dtype=torch.bool, seed=1)]),
          Case("fmin", [NC(R(3, 4, dtype=torch.bool)), R(3, 1, dtype=torch.bool, seed=1)]),
          Case("fmin", [R(6, dtype=torch.int64), R(6, dtype=torch.bool, seed=2)]),
          Case("copysign", [R(5, dtype=torch.int64), torch.tensor([-0.5, 0.5, -1.0, 1.0, -2.0])]),
          Case("fmod", [R(3, 4), R(4, lo=0.5)]), Case("fmod", [NC(R(3, 4)), 0.7]),
          Case("fmod", [R(5, dtype=f64), R(5, lo=0.5, seed=1, dtype=f64)]),
          Case("fmod", [R(6, dtype=torch.int64), -4]),
          Case("zeta", [R(3, 4, lo=1.5), R(4, lo=0.5, seed=1)], ref=torch.special.zeta),
          Case("zeta", [R(5, lo=1.5, dtype=f64), R(5, lo=0.5, seed=1, dtype=f64)],
               ref=torch.special.zeta)]
    return c + _incomplete_gamma_cases() + _frexp_cases()


def _same_nans(got: Any, want: Any) -> None:
    """Forward only (a check keeps a case out of the gradient suites): values with NaNs and
    infinities, one tensor or a tuple."""
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same_nans(g, w)
        return
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, equal_nan=True)


def _incomplete_gamma_cases() -> List[Case]:
    """igamma/igammac on a, x > 0 (their gradient in x; a has none, NO_GRAD_ARGS), broadcast,
    mixed dtypes, the boundaries, and a > 20 near x: the asymptotic expansion, where PyTorch's
    float64 values are ~1e-9 off (its pi in float precision, runtime/core/igamma_math.h)."""
    f64, inf, nan = torch.float64, float("inf"), float("nan")
    a_large = R(6, lo=25, dtype=f64)
    edges = [torch.tensor([0.0, 0.0, 2.0, -1.0, inf, 2.0, nan, inf]),
             torch.tensor([3.0, 0.0, 0.0, 2.0, 5.0, inf, 1.0, nan])]
    c: List[Case] = []
    for op in ["igamma", "igammac"]:
        c += [Case(op, [R(3, 4, lo=0.5), R(4, lo=0.1, seed=1)]),
              Case(op, [NC(R(4, 3, lo=0.2)), R(4, 3, lo=0.2, seed=2)]),
              Case(op, [R(2, 1, 4, lo=0.3, dtype=f64), R(3, 1, lo=0.05, seed=1, dtype=f64)]),
              Case(op, [R(5, dtype=torch.int64).abs() + 1, R(5, lo=0.5, seed=3)]),
              Case(op, [a_large, a_large + R(6, seed=4, dtype=f64)], rtol=1e-8),
              Case(op, edges, check=_same_nans)]
    return c


def _frexp_cases() -> List[Case]:
    """frexp's (mantissa, int32 exponent); its gradient through the mantissa."""
    inf, nan = float("inf"), float("nan")
    special = torch.tensor([0.0, -0.0, 1.0, -3.5, 0.1, inf, -inf, nan, 1e-40])
    return [Case("frexp", [R(3, 4)]), Case("frexp", [NC(R(4, 5))]),
            Case("frexp", [R(5, dtype=torch.float64) * 1e3]), Case("frexp", [R()]),
            Case("frexp", [special], check=_same_nans),
            Case("frexp", [torch.tensor([1e-310, -5e-324, 2.0 ** 1000], dtype=torch.float64)],
                 check=_same_nans)]
