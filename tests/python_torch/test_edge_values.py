"""Edge values on the tensord PyTorch device, against PyTorch on the CPU as oracle: prod's
gradient at zeros, the 0-norm's and normalize(p=0)'s gradient, integer hardtanh, bool add with
alpha, integer arange and linspace, a caught error not raised again (issue 25's wrong values;
tests/python/test_edge_values.py checks the native client)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

D = "tensord"


def _grads(fn, x: "torch.Tensor") -> "tuple[torch.Tensor, torch.Tensor]":
    """fn's input gradient on the device and on the CPU (zeros where PyTorch gives None)."""
    out = []
    for dev in (D, "cpu"):
        leaf = x.detach().to(dev).requires_grad_(True)
        fn(leaf).sum().backward()
        grad = torch.zeros_like(leaf) if leaf.grad is None else leaf.grad
        out.append(grad.cpu())
    return out[0], out[1]


@pytest.mark.parametrize("dim", [None, 0])
def test_prod_gradient_at_one_zero(td: object, dim: "int | None") -> None:
    x = torch.tensor([2.0, 0.0, 3.0])
    fn = (lambda t: t.prod()) if dim is None else (lambda t: t.prod(dim))
    got, want = _grads(fn, x)
    assert want.tolist() == [0.0, 6.0, 0.0]
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("dim", [None, 1, -1])
def test_prod_gradient_with_several_zeros(td: object, dim: "int | None") -> None:
    x = torch.linspace(0.5, 2.0, 24, dtype=torch.float64).reshape(2, 3, 4)
    x[0, 1, 2] = x[1, 0, 0] = x[1, 0, 3] = 0
    fn = (lambda t: t.prod()) if dim is None else (lambda t: t.prod(dim))
    got, want = _grads(fn, x)
    assert not torch.isnan(got).any()
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dim", [None, 1])
def test_zero_norm_and_normalize_p0_have_zero_gradient(td: object, dim: "int | None") -> None:
    x = torch.tensor([[1.5, 0.0, -2.0], [0.0, 0.0, 3.0]])
    norm = (lambda t: t.norm(0)) if dim is None else (lambda t: t.norm(0, dim=dim))
    got, want = _grads(norm, x)
    assert want.abs().sum() == 0
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got, want = _grads(lambda t: F.normalize(t, p=0.0, dim=1), x)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("lo,hi", [(-1.5, 2.5), (-2.7, 0.2), (0.5, 0.9)])
def test_hardtanh_on_int64_keeps_the_dtype(td: object, lo: float, hi: float) -> None:
    x = torch.tensor([-3, -2, -1, 0, 1, 2, 3])
    got, want = F.hardtanh(x.to(D), lo, hi).cpu(), F.hardtanh(x, lo, hi)
    assert got.dtype == want.dtype == torch.int64
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("alpha", [False, True])
def test_bool_add_honours_alpha(td: object, alpha: bool) -> None:
    a = torch.tensor([True, False, True, False])
    b = torch.tensor([True, True, False, False])
    got, want = torch.add(a.to(D), b.to(D), alpha=alpha).cpu(), torch.add(a, b, alpha=alpha)
    assert got.dtype == want.dtype == torch.bool
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("args", [(3.1,), (0.5, 3.1), (0.5, 3.1, 1.5), (-2.5, 2.5),
                                  (5.5, -1.2, -1.7), (2.9,)])
def test_integer_arange_with_fractional_bounds(td: object, args: tuple) -> None:
    got = torch.arange(*args, dtype=torch.int64, device=D).cpu()
    assert got.tolist() == torch.arange(*args, dtype=torch.int64).tolist()


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
@pytest.mark.parametrize("args", [(0.5, 9.7, 6), (0, 10, 4), (1.5, 4.5, 5), (10, 0, 3)])
def test_integer_linspace_rounds_as_torch(td: object, args: tuple, dtype: "torch.dtype") -> None:
    got = torch.linspace(*args, dtype=dtype, device=D).cpu()
    assert got.dtype == dtype
    assert got.tolist() == torch.linspace(*args, dtype=dtype).tolist()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("args", [(0.5, 9.7, 7), (-1, 1, 1), (2, -3, 0), (0.1, 0.7, 13)])
def test_float_linspace_as_torch(td: object, args: tuple, dtype: "torch.dtype") -> None:
    got = torch.linspace(*args, dtype=dtype, device=D).cpu()
    # within an ulp: PyTorch's vectorised lanes (their width the CPU's) round unlike its scalar loop
    torch.testing.assert_close(got, torch.linspace(*args, dtype=dtype))


def test_a_caught_error_is_not_raised_again_by_synchronize(td: object) -> None:
    a, b = torch.ones(2, 3, device=D), torch.ones(4, 5, device=D)
    with pytest.raises(RuntimeError):
        torch.matmul(a, b).cpu()
    torch.tensord.synchronize()
    assert (a + 1).cpu().tolist() == [[2.0] * 3] * 2
