"""as_strided (the views the reference decompositions of diagonal, unfold, trace ... are made
of), kthvalue, median, nanmedian, masked_scatter and addbmm run on the daemon (no CPU fallback:
conftest's ``no_fallback``), with PyTorch's values and gradients; an as_strided view outside its
storage is refused."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _same(program, *inputs: "torch.Tensor") -> None:
    """``program``'s outputs and gradients on the device equal local PyTorch's."""
    cpu = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    dev = [x.to(D).requires_grad_(x.is_floating_point()) for x in inputs]
    for got, want in zip(program(*dev), program(*cpu)):
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def _with_grads(outs: list, inputs: list) -> list:
    # Weights made on the CPU: the daemon's float64 linspace rounds differently (not tested here).
    w = [torch.linspace(-1, 2, o.numel(), dtype=o.dtype).reshape(o.shape).to(o.device)
         for o in outs if o.is_floating_point()]
    loss = sum((o * wi).sum() for o, wi in zip([o for o in outs if o.is_floating_point()], w))
    leaves = [x for x in inputs if x.requires_grad]
    return outs + list(torch.autograd.grad(loss, leaves))


def test_as_strided_views_and_gradients(td: object) -> None:
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)

    def program(a: "torch.Tensor") -> list:
        tail = a[1:]  # a view at an offset: as_strided's offset counts from the storage
        outs = [a.as_strided((3, 4), (2, 1), 5),       # overlapping windows
                tail.as_strided((2, 2), (7, 1)),       # at tail's own offset
                tail.as_strided((3,), (0,), 2),        # stride 0
                a.diagonal(1), torch.diag_embed(a[:2]), a.unfold(1, 3, 2), a.trace().reshape(1),
                torch.as_strided_scatter(a, a[0, :3] * 2, (3,), (7,), 1)]
        return _with_grads(outs, [a])

    _same(program, x)


def test_as_strided_outside_the_storage_is_refused(td: object) -> None:
    x = torch.arange(6.0, device=D)
    with pytest.raises(Exception, match="as_strided"):
        x.as_strided((4,), (2,), 0).cpu()  # reaches element 6 of 6
    with pytest.raises(RuntimeError, match="invalid storage offset"):
        x.as_strided((1,), (1,), -1)
    assert x.as_strided((2,), (5,), 0).cpu().tolist() == [0.0, 5.0]


def test_rank_selections_with_nan_and_masks(td: object) -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 7, generator=g, dtype=torch.float64)
    x[1, 3] = x[2, 0] = x[2, 5] = float("nan")
    y = torch.randn(4, 7, generator=g, dtype=torch.float64)
    b1, b2 = torch.randn(3, 4, 5, generator=g), torch.randn(3, 5, 2, generator=g)
    mask = torch.rand(4, 7, generator=g) > 0.5

    def program(a: "torch.Tensor", b: "torch.Tensor", m: "torch.Tensor") -> list:
        med, med_i = a.median(dim=1)
        nmed, nmed_i = a.nanmedian(dim=0, keepdim=True)
        kv, ki = b.kthvalue(3, dim=1)
        outs = [med, med_i, nmed, nmed_i, kv, ki, b.median(), a.nanmedian(),
                b.masked_scatter(m, a * 3)]
        return _with_grads(outs, [a, b])

    _same(program, x, y, mask)

    def bmm_program(c: "torch.Tensor", p: "torch.Tensor", q: "torch.Tensor") -> list:
        return _with_grads([torch.addbmm(c, p, q, beta=0.5, alpha=2), torch.addbmm(c, p, q)],
                           [c, p, q])

    _same(bmm_program, torch.randn(4, 2, generator=g), b1, b2)
