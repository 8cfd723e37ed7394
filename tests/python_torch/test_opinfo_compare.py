"""The OpInfo harness's comparison (``opinfo_compare.close``) on CPU tensors alone: eigenvectors
match PyTorch's up to one sign per column (Note [Eigenvector signs]), and nothing looser."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from opinfo_compare import SIGN_FREE_COLUMNS, close  # noqa: E402

EIGH = SIGN_FREE_COLUMNS["linalg.eigh"]


def _eigh(dtype: torch.dtype) -> tuple:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(2, 5, 5, generator=gen, dtype=dtype)
    return tuple(torch.linalg.eigh(a, UPLO="U"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigenvectors_match_up_to_column_signs(dtype: torch.dtype) -> None:
    w, v = _eigh(dtype)
    signs = torch.tensor([[1, -1, 1, -1, -1], [-1, 1, 1, 1, -1]], dtype=dtype).unsqueeze(-2)
    close((w, v * signs), (w, v), EIGH)
    with pytest.raises(AssertionError):  # the plain comparison holds signs to PyTorch's
        close((w, v * signs), (w, v))


@pytest.mark.parametrize("name", ["one element's sign", "swapped columns", "a perturbation",
                                  "a column scaled by 2"])
def test_other_differences_still_fail(name: str) -> None:
    w, v = _eigh(torch.float64)
    bad = v.clone()
    if name == "one element's sign":
        bad[0, 2, 3] = -bad[0, 2, 3]
    elif name == "swapped columns":
        bad = bad[..., [1, 0, 2, 3, 4]]
    elif name == "a perturbation":
        bad[1, 4, 1] += 1e-3
    else:
        bad[0, :, 2] *= 2
    with pytest.raises(AssertionError):
        close((w, bad), (w, v), EIGH)


def test_eigenvalues_are_not_sign_free() -> None:
    w, v = _eigh(torch.float64)
    with pytest.raises(AssertionError):
        close((-w, v), (w, v), EIGH)
