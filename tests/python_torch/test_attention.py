"""F.scaled_dot_product_attention on the tensord device against local PyTorch: values and the
gradients of query, key and value, on the daemon's fused rows where the call is one PyTorch's
CPU flash op computes (Ev == E; PyTorch's composite otherwise), with no CPU fallback (conftest's
``no_fallback``, the backward included). Causal with L < S and L > S, bool
and float masks that broadcast, Ev != E, an explicit scale, grouped-query heads, a fully masked
query (0, as PyTorch's flash kernel gives), float32/float64; ATen's flash op and its backward
called directly (the log-sum-exp too)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional
aten = torch.ops.aten
D = "tensord"


def _inputs(shapes: tuple, dtype: "torch.dtype", seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g, dtype=dtype) for s in shapes]


def _mask(kind: str, shape: tuple, dtype: "torch.dtype", seed: int) -> "torch.Tensor":
    g = torch.Generator().manual_seed(seed)
    if kind == "bool":
        m = torch.rand(shape, generator=g) < 0.5
        m[..., 0] = True  # every query may attend to one key at least
        return m
    return torch.randn(shape, generator=g, dtype=dtype)


# (query, key, value shapes, mask kind and shape or None, keyword arguments)
CASES = [
    (((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), None, {}),
    (((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), None, {"is_causal": True}),
    (((2, 3, 9, 4), (2, 3, 5, 4), (2, 3, 5, 4)), None, {"is_causal": True}),
    (((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), None, {"scale": 0.3}),
    (((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), ("bool", (5, 7)), {}),
    (((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), ("bool", (2, 1, 5, 7)), {}),
    (((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)), ("float", (3, 5, 7)), {}),
    (((2, 4, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8)), None, {"enable_gqa": True}),
    (((1, 2, 130, 16), (1, 2, 300, 16), (1, 2, 300, 16)), None, {"is_causal": True}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0][0]}-{c[0][1]}-{c[1]}-{sorted(c[2])}")
def test_sdpa_matches_pytorch(td: object, case: tuple, dtype: "torch.dtype") -> None:
    shapes, mask, kw = case
    cpu = [x.requires_grad_() for x in _inputs(shapes, dtype, seed=len(shapes[0]))]
    dev = [x.detach().to(D).requires_grad_() for x in cpu]
    if mask is not None:
        m = _mask(mask[0], mask[1], dtype, seed=1)
        kw = dict(kw, attn_mask=m)
    want = F.scaled_dot_product_attention(*cpu, **kw)
    dkw = dict(kw, attn_mask=kw["attn_mask"].to(D)) if mask is not None else kw
    got = F.scaled_dot_product_attention(*dev, **dkw)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == torch.float32 else {}
    torch.testing.assert_close(got.cpu(), want.detach(), **tol)
    cot = torch.randn(want.shape, generator=torch.Generator().manual_seed(9), dtype=dtype)
    want.backward(cot)
    got.backward(cot.to(D))
    for i, (d, c) in enumerate(zip(dev, cpu)):
        torch.testing.assert_close(d.grad.cpu(), c.grad, **tol, msg=f"grad of input {i}")


def test_sdpa_takes_the_flash_op(td: object) -> None:
    """4-d, one head size, no dropout: PyTorch's CPU flash op (the fused rows), whose backward
    PyTorch's autograd records; other head sizes take PyTorch's composite."""
    q, k, v = (x.to(D).requires_grad_() for x in _inputs(((1, 2, 3, 4),) * 3, torch.float32, 0))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert "FlashAttentionForCpu" in type(out.grad_fn).__name__, out.grad_fn
    v6 = torch.randn(1, 2, 3, 6).to(D).requires_grad_()
    out = F.scaled_dot_product_attention(q, k, v6)
    assert "FlashAttention" not in type(out.grad_fn).__name__, out.grad_fn


def test_fully_masked_query_is_zero_like_pytorch(td: object) -> None:
    q, k, v = _inputs(((1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4)), torch.float32, seed=0)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    got = F.scaled_dot_product_attention(q.to(D), k.to(D), v.to(D), attn_mask=mask.to(D))
    assert (got.cpu()[:, :, 1] == 0).all()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_op_and_backward_directly(td: object, causal: bool) -> None:
    """ATen's CPU flash op and its backward on the daemon: output, log-sum-exp, gradients
    (PyTorch's CPU kernel needs Ev == E)."""
    q, k, v = _inputs(((2, 2, 6, 4), (2, 2, 9, 4), (2, 2, 9, 4)), torch.float64, seed=3)
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal)
    dout, dlse = aten._scaled_dot_product_flash_attention_for_cpu(
        q.to(D), k.to(D), v.to(D), 0.0, causal)
    torch.testing.assert_close(dout.cpu(), out)
    torch.testing.assert_close(dlse.cpu(), lse)
    g = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    want = aten._scaled_dot_product_flash_attention_for_cpu_backward(
        g, q, k, v, out, lse, 0.0, causal)
    got = aten._scaled_dot_product_flash_attention_for_cpu_backward(
        g.to(D), q.to(D), k.to(D), v.to(D), dout, dlse, 0.0, causal)
    for i, (a, b) in enumerate(zip(got, want)):
        torch.testing.assert_close(a.cpu(), b, msg=f"gradient {i}")
