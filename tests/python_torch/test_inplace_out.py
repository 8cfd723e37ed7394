"""``out=`` and in-place forms on the device (``tensord/torch/_twins.py``): the functional op's
values written into the given tensors, which are returned, with no CPU fallback (conftest's
``no_fallback``); PyTorch's refusals of a downcast and of an in-place broadcast kept."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _both(fn: object, *inputs: "torch.Tensor") -> None:
    """``fn(out_device, *inputs)`` on the device and on the CPU: same values, ``out`` returned."""
    want = fn("cpu", *inputs)
    got = fn(D, *[x.to(D) for x in inputs])
    for w, g in zip(want, got):
        assert g.device.type == D
        torch.testing.assert_close(g.cpu(), w)


def test_out_overloads_write_into_their_arguments(td: object) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 5, generator=g)
    y = torch.randn(2, 5, generator=g)

    def program(dev: str, a: "torch.Tensor", b: "torch.Tensor") -> list:
        cat = torch.empty(5, 5, device=dev)
        vals = torch.empty(5, device=dev)
        idx = torch.empty(5, dtype=torch.int64, device=dev)
        s = torch.empty(3, 5, device=dev)
        si = torch.empty(3, 5, dtype=torch.int64, device=dev)
        assert torch.cat([a, b], out=cat) is cat
        r = torch.max(a, 0, out=(vals, idx))
        assert r[0] is vals and r[1] is idx
        r = torch.sort(a, 1, out=(s, si))
        assert r[0] is s and r[1] is si
        return [cat, vals, idx, s, si]

    _both(program, x, y)


def test_out_into_a_viewed_tensor_writes_through(td: object) -> None:
    x = torch.arange(6.0).reshape(2, 3)

    def program(dev: str, a: "torch.Tensor") -> list:
        base = torch.zeros(2, 6, device=dev)
        view = base[:, ::2]
        torch.cat([a[:1], a[1:]], out=view)
        return [base]

    _both(program, x)


def test_out_refuses_a_downcast_as_pytorch_does(td: object) -> None:
    a = torch.tensor([[1.5, 2.5]], device=D)
    out = torch.empty(2, 2, dtype=torch.int64, device=D)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.cat([a, a], out=out)


def test_inplace_ops_write_their_functional_value_through(td: object) -> None:
    g = torch.Generator().manual_seed(4)
    x = torch.rand(3, 4, generator=g) + 0.5
    y = torch.randn(3, 4, generator=g)

    def program(dev: str, a: "torch.Tensor", b: "torch.Tensor") -> list:
        p, q, r = a.clone(), a.clone(), a.clone()
        assert p.atan2_(b) is p and q.copysign_(b) is q
        assert r.polygamma_(1) is r  # polygamma(n, self): the twin's arguments by name
        view = torch.zeros(3, 8, device=dev)[:, 1::2]
        view.remainder_(b)  # into a strided view of a larger tensor
        s = a.clone()
        s.as_strided_((2, 2), (1, 3))  # an in-place view: new sizes and strides
        assert s.shape == (2, 2) and s.stride() == (1, 3)
        return [p, q, r, view, s.contiguous()]

    _both(program, x, y)


def test_inplace_keeps_pytorchs_refusals(td: object) -> None:
    i = torch.tensor([1, 2], device=D)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.atan2_(torch.tensor([1.0, 2.0], device=D))
    one = torch.tensor([1.0], device=D)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        one.atan2_(torch.tensor([1.0, 2.0], device=D))
