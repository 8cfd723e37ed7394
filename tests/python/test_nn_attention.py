"""td.nn.functional.scaled_dot_product_attention on the daemon's row (the fused CPU kernels;
composed on CUDA) against the formula in torch 1.13 (no public SDPA there): softmax(q k^T *
scale + mask) v in float64 on the CPU. Values and the gradients of query, key and value for
causal (L < S, L > S), bool and float masks, broadcast batch dims, Ev != E, grouped-query
heads and sizes spanning several of the kernel's blocks; float64 gradients against central
differences of the daemon's own forward; a fully masked query (0 on the CPU, as PyTorch's flash
kernel); a float mask's own gradient (the composed path)."""

import numpy as np
import pytest
import torch

import tensord as td
from nn_compare import compare_function, rand
from sdpa_reference import bool_mask, reference

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional


# (query, key, value shapes, keyword arguments)
CASES = [
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {}),
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {"is_causal": True}),        # L < S
    ((2, 9, 4), (2, 5, 4), (2, 5, 3), {"is_causal": True}),                 # L > S
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {"scale": 0.3}),
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {"attn_mask": bool_mask(5, 7)}),
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {"attn_mask": bool_mask(2, 1, 5, 7)}),
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {"attn_mask": rand(3, 5, 7, seed=4)}),
    ((2, 3, 5, 4), (3, 7, 4), (1, 3, 7, 2), {}),                             # broadcast batch
    ((5, 4), (7, 4), (7, 6), {"attn_mask": rand(5, 1, seed=5)}),            # no batch, [L, 1]
    ((2, 4, 5, 4), (2, 2, 7, 4), (2, 2, 7, 3), {"enable_gqa": True}),
    ((2, 4, 5, 4), (2, 1, 7, 4), (2, 1, 7, 3), {"enable_gqa": True,
                                                "attn_mask": bool_mask(4, 5, 7)}),
    ((1, 2, 130, 16), (1, 2, 300, 16), (1, 2, 300, 8), {}),                  # several blocks
    ((1, 2, 130, 16), (1, 2, 300, 16), (1, 2, 300, 8), {"is_causal": True}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{sorted(c[3])}")
def test_matches_torch(shapes, dtype, device):
    qs, ks, vs, kw = shapes
    kw = {k: (v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype != bool else v)
          for k, v in kw.items()}
    ins = [rand(*s, seed=i).astype(dtype) for i, s in enumerate((qs, ks, vs))]
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    compare_function(F.scaled_dot_product_attention, reference, ins, grad_inputs=[0, 1, 2],
                     **tol, **kw)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": True}])
def test_float64_gradients_match_central_differences(kw):
    """The daemon's gradients against (f(x + h) - f(x - h)) / 2h of its own forward."""
    g = np.random.default_rng(3)
    q, k, v = (g.standard_normal(s) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    mask = td.tensor(bool_mask(3, 4, seed=1)) if kw.get("mask") else None
    causal = kw.get("is_causal", False)
    w = g.standard_normal((2, 3, 3))

    def loss(qq, kk, vv):
        out = F.scaled_dot_product_attention(td.tensor(qq), td.tensor(kk), td.tensor(vv),
                                             attn_mask=mask, is_causal=causal)
        return float((out.numpy() * w).sum())

    ts = [td.tensor(x, requires_grad=True) for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*ts, attn_mask=mask, is_causal=causal)
    (out * td.tensor(w)).sum().backward()
    xs = [q, k, v]
    for i, x in enumerate(xs):
        want = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            keep = x[idx]
            x[idx] = keep + 1e-6
            up = loss(*xs)
            x[idx] = keep - 1e-6
            down = loss(*xs)
            x[idx] = keep
            want[idx] = (up - down) / 2e-6
        np.testing.assert_allclose(ts[i].grad.numpy(), want, rtol=1e-6, atol=1e-8,
                                   err_msg=f"input {i}")


def test_fully_masked_query_gives_zero():
    """PyTorch's CPU flash kernel: a query with no key to attend gets 0 (and no gradient)."""
    q, k, v = (td.tensor(rand(2, 3, 4, seed=i), requires_grad=True) for i in range(3))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=td.tensor(mask))
    got = out.numpy()
    assert (got[:, 1] == 0).all()
    want = reference(*(torch.tensor(rand(2, 3, 4, seed=i)) for i in range(3)),
                     attn_mask=torch.tensor(mask)).numpy()
    np.testing.assert_allclose(got[:, [0, 2]], want[:, [0, 2]], rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert (q.grad.numpy()[:, 1] == 0).all()
    assert np.isfinite(k.grad.numpy()).all() and np.isfinite(v.grad.numpy()).all()


def test_float_mask_gets_its_gradient():
    """A float mask that requires grad takes the composed path (the fused backward has no mask
    gradient): its gradient is PyTorch's."""
    compare_function(F.scaled_dot_product_attention, reference,
                     [rand(2, 5, 4), rand(2, 7, 4, seed=1), rand(2, 7, 3, seed=2),
                      rand(5, 7, seed=3)], grad_inputs=[0, 1, 2, 3])


def test_rejects_bad_calls():
    q = td.tensor(rand(2, 4, 3, 2))
    with pytest.raises(Exception, match="multiple of the key's"):
        F.scaled_dot_product_attention(q, td.tensor(rand(2, 3, 3, 2)),
                                       td.tensor(rand(2, 3, 3, 2)), enable_gqa=True).numpy()
    with pytest.raises(Exception, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=td.tensor(rand(2, 3))).numpy()
    with pytest.raises(Exception, match="bool or of the query's dtype"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=td.tensor(rand(3, 3).astype(
            np.float64))).numpy()


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": True}])
def test_double_backward_matches_torch(kw):
    """create_graph through the fused row takes the recorded composite gradient (Note
    [Second-order fused rows]): a gradient penalty on the query, float64."""
    g = np.random.default_rng(5)
    vals = [g.standard_normal(s) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3))]
    r, w = g.standard_normal((2, 3, 3)), g.standard_normal((2, 3, 2))
    mask = bool_mask(3, 4, seed=2) if kw.get("mask") else None
    causal = kw.get("is_causal", False)

    def penalty(lib, fn, params, as_tensor):
        m = as_tensor(mask) if mask is not None else None
        out = fn(*params, attn_mask=m, is_causal=causal)
        (dq,) = lib.autograd.grad((out * as_tensor(r)).sum(), params[0], create_graph=True)
        return (dq * dq).sum() + (dq * as_tensor(w)).sum()

    dp = [td.tensor(x, requires_grad=True) for x in vals]
    tp = [torch.tensor(x, requires_grad=True) for x in vals]
    got = td.autograd.grad(penalty(td, F.scaled_dot_product_attention, dp, td.tensor), dp)
    want = torch.autograd.grad(penalty(torch, reference, tp, torch.tensor), tp)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-10,
                                   err_msg=f"input {i}")
