"""The daemon's own gradients of the LAPACK rows where the reference suite
(test_autograd_reference.py) cannot compare with torch 1.13: linalg_lstsq with a vector b (1.13's
own backward fails on it) against the same problem with b as a one-column matrix (whose gradient
that suite checks against PyTorch and finite differences), and linalg_qr's backward raising
PyTorch's error where Q does not determine the gradient (mode 'r')."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tensord as td

pytestmark = pytest.mark.usefixtures("session")

F = td.CatalogFunction


def _leaf(t: torch.Tensor) -> td.Tensor:
    return td.tensor(t.numpy(), requires_grad=True)


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5), (2, 4, 4)])
def test_lstsq_vector_b_gradient_matches_the_matrix_case(shape: tuple) -> None:
    g = torch.Generator().manual_seed(1)
    a = torch.randn(*shape, generator=g, dtype=torch.float64)
    b = torch.randn(*shape[:-1], generator=g, dtype=torch.float64)
    w = torch.randn(*shape[:-2], shape[-1], generator=g, dtype=torch.float64)
    grads = []
    for vector in (True, False):
        la, lb = _leaf(a), _leaf(b if vector else b.unsqueeze(-1))
        x = F("linalg_lstsq")(la, lb)[0]
        weight = td.tensor(w.numpy() if vector else w.unsqueeze(-1).numpy())
        F("sum")(F("mul")(x, weight)).backward()
        grads.append((la.grad.numpy(), lb.grad.numpy().reshape(b.shape)))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.abs(grads[0][0]).max() > 0 and np.abs(grads[0][1]).max() > 0


def test_qr_mode_r_backward_is_pytorchs_error() -> None:
    a = _leaf(torch.randn(4, 3, dtype=torch.float64))
    r = F("linalg_qr")(a, mode="r")[1]
    F("sum")(r).backward()  # not waited for: the next synchronize raises its error
    with pytest.raises(td.Error, match="depends on Q"):
        td.synchronize()
