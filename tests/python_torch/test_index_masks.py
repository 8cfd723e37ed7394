"""Boolean-mask indexing on the device (``tensord/torch/_indexing.py``, Note [Linearised
indices]): ``x[mask]``, masks mixed with integer indices, and ``index_put``'s gradient (which
indexes with the mask) as PyTorch's on the CPU, with no CPU fallback (conftest's
``no_fallback``)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _inputs() -> tuple:
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4, 5, 3, generator=g)
    return x, x[..., 0] > 0, torch.tensor([True, False, True, True, False])


@pytest.mark.parametrize("case", ["2d_mask", "1d_mask_dim1", "mask_and_index", "uint8"])
def test_mask_indexing_matches_the_cpu(td: object, case: str) -> None:
    x, mask2, mask1 = _inputs()

    def pick(t: "torch.Tensor", m2: "torch.Tensor", m1: "torch.Tensor") -> "torch.Tensor":
        if case == "2d_mask":
            return t[m2]
        if case == "1d_mask_dim1":
            return t[:, m1]
        if case == "mask_and_index":
            return t[torch.tensor([0, 2, 3], device=t.device), m1]
        return t[m2.to(torch.uint8).bool()]

    want = pick(x, mask2, mask1)
    got = pick(x.to(D), mask2.to(D), mask1.to(D))
    assert got.device.type == D
    torch.testing.assert_close(got.cpu(), want)


def test_a_cpu_mask_indexes_a_device_tensor(td: object) -> None:
    x, mask2, _ = _inputs()
    torch.testing.assert_close(x.to(D)[mask2].cpu(), x[mask2])


def test_a_mask_of_the_wrong_shape_raises_as_pytorch_does(td: object) -> None:
    x = torch.zeros(3, 4, device=D)
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[torch.ones(5, dtype=torch.bool, device=D)]


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_a_mask_and_its_gradient(td: object, accumulate: bool) -> None:
    x, _, mask1 = _inputs()
    base, mask = x[:, :, 0], mask1[:4]  # (4, 5) and 3 true rows
    values = torch.arange(15.0).reshape(3, 5)

    def run(dev: str) -> tuple:
        v = values.to(dev).detach().requires_grad_()
        out = torch.index_put(base.to(dev), (mask.to(dev),), v, accumulate=accumulate)
        (out * out).sum().backward()
        return out, v.grad

    for w, g in zip(run("cpu"), run(D)):
        torch.testing.assert_close(g.cpu(), w)
