"""out= forms whose PyTorch composite rebinds instead of writing (Note [Rebound out=] of
tensord/torch/_out_rebinding.py): ``out`` holds PyTorch's CPU result, whatever it held before."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _matrices(dtype: "torch.dtype") -> "torch.Tensor":
    g = torch.Generator().manual_seed(0)
    a = torch.randn(2, 5, 3, generator=g, dtype=dtype)
    return a @ a.mT  # rank 3 of 5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kwargs", [{}, {"hermitian": True}, {"atol": 1.0}, {"rtol": 0.5},
                                    {"atol": 0.1, "rtol": 0.1}])
@pytest.mark.parametrize("fill", [-1, 77])
def test_matrix_rank_out_is_written(td: object, dtype: "torch.dtype", kwargs: dict,
                                    fill: int) -> None:
    x = _matrices(dtype)
    want = torch.linalg.matrix_rank(x, **kwargs)
    out = torch.full(want.shape, fill, dtype=torch.int64, device=D)
    res = torch.linalg.matrix_rank(x.to(D), **kwargs, out=out)
    assert res is out
    assert out.cpu().tolist() == want.tolist()


def test_matrix_rank_out_with_tensor_tolerances_and_resize(td: object) -> None:
    x = _matrices(torch.float64)
    atol = torch.tensor([0.5, 2.0], dtype=torch.float64)
    want = torch.linalg.matrix_rank(x, atol=atol, rtol=torch.tensor(0.0, dtype=torch.float64))
    out = torch.full((7,), 9, dtype=torch.int64, device=D)
    torch.linalg.matrix_rank(x.to(D), atol=atol.to(D),
                             rtol=torch.tensor(0.0, dtype=torch.float64, device=D), out=out)
    assert out.shape == want.shape and out.cpu().tolist() == want.tolist()
    tol_out = torch.empty(0, dtype=torch.int64, device=D)
    torch.linalg.matrix_rank(x.to(D), tol=0.5, out=tol_out)
    assert tol_out.cpu().tolist() == torch.linalg.matrix_rank(x, tol=0.5).tolist()
