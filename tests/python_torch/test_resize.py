"""``resize_``, ``resize_as_`` and ``out=`` resizing on the device (``tensord/torch/_resize.py``,
Note [Resize keeps the storage]): values, strides and storage sizes as PyTorch's on the CPU,
storage kept where the new geometry fits it and grown (old elements first) where not, views and
their base sharing it; all on the daemon (conftest's ``no_fallback``)."""

from __future__ import annotations

import warnings
from typing import Any, Callable, List

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


def _both(program: Callable[[str], List[Any]]) -> None:
    """``program(device)`` on the device and on the CPU: the same values, strides and offsets
    of every tensor it returns (anything else, storage sizes above all, compared as it is)."""
    want, got = program("cpu"), program(D)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        if not isinstance(w, torch.Tensor):
            assert g == w
            continue
        assert g.device.type == D
        assert g.shape == w.shape and g.stride() == w.stride()
        assert g.storage_offset() == w.storage_offset()
        torch.testing.assert_close(g.cpu(), w)


def test_shrinking_keeps_the_storage_and_growing_back_shows_it(td: object) -> None:
    def program(dev: str) -> list:
        x = torch.arange(12.0, device=dev)
        r = x.resize_(2, 3)
        assert r is x
        small = x.clone()
        x.resize_(3, 4)  # within the 12-element storage: the old elements are back
        return [small, x, x.untyped_storage().nbytes()]

    _both(program)


def test_growing_keeps_the_old_elements_first(td: object) -> None:
    def program(dev: str) -> list:
        x = torch.arange(6, dtype=torch.int64, device=dev).reshape(2, 3)
        x.resize_(4, 5)
        x.view(-1)[6:] = -1  # the new elements are uninitialized: give them values
        x.mul_(2)
        return [x, x.untyped_storage().nbytes()]

    _both(program)


def test_a_view_resizes_within_its_base_storage_and_writes_through(td: object) -> None:
    def program(dev: str) -> list:
        base = torch.arange(10.0, device=dev)
        v = base[2:4]
        v.resize_(2, 3)  # elements 2..7 of the base's storage
        seen = v.clone()
        v.fill_(-1.0)
        return [seen, v, base, v.untyped_storage().nbytes()]

    _both(program)


def test_a_view_growing_past_the_storage_grows_its_base_too(td: object) -> None:
    def program(dev: str) -> list:
        base = torch.arange(6.0, device=dev)
        v = base[4:]
        v.resize_(5)  # the storage grows to 9 elements, the base's too
        v.copy_(torch.arange(10.0, 15.0))
        base.add_(100.0)  # the base and the view share the new storage
        return [v, base, v.untyped_storage().nbytes(), base.untyped_storage().nbytes()]

    _both(program)


@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last])
def test_memory_format_strides(td: object, fmt: Any) -> None:
    def program(dev: str) -> list:
        x = torch.arange(24.0, device=dev)
        x.resize_(1, 2, 3, 4, memory_format=fmt)
        y = torch.arange(4.0, device=dev)
        y.resize_(2, 3, 2, 2, memory_format=fmt)  # grows: the first 4 elements kept
        return [x, x.untyped_storage().nbytes(), y.stride(), y.untyped_storage().nbytes(),
                y.as_strided((4,), (1,), 0)]

    _both(program)


def test_same_size_keeps_the_strides(td: object) -> None:
    def program(dev: str) -> list:
        x = torch.arange(6.0, device=dev).reshape(2, 3).t()
        x.resize_(3, 2)
        return [x]

    _both(program)


def test_resize_as_with_preserve_takes_the_template_format(td: object) -> None:
    def program(dev: str) -> list:
        # channels-last strides from a view (the device's other results are row-major)
        template = torch.empty(2, 4, 5, 3, device=dev).permute(0, 3, 1, 2)
        a = torch.arange(8.0, device=dev)
        a.resize_as_(template, memory_format=torch.preserve_format)
        b = torch.arange(8.0, device=dev)
        b.resize_as_(template)
        return [a.shape, a.stride(), b.stride()]

    _both(program)


def test_out_of_another_shape_is_resized(td: object) -> None:
    g = torch.Generator().manual_seed(5)
    m = torch.randn(3, 3, generator=g) + 3 * torch.eye(3)
    x = torch.randn(4, 3, generator=g)

    def program(dev: str) -> list:
        a, b = m.to(dev), x.to(dev)
        s = torch.empty(0, device=dev)
        torch.add(b, 1.0, out=s)
        p = torch.empty(0, device=dev)
        torch.linalg.matrix_power(a, -2, out=p)  # linalg_inv_ex's out= too
        ls = torch.empty(0, device=dev)
        torch._C._nn.log_sigmoid(b, out=ls)
        lu, piv = torch.empty(0, device=dev), torch.empty(0, dtype=torch.int32, device=dev)
        torch.linalg.lu_factor(a, out=(lu, piv))
        # (PyTorch's CPU kernel restrides lu's out column-major; the device's results are
        # row-major: Note [Strides mirror the daemon])
        return [s, p, ls, lu.contiguous(), piv.long()]

    _both(program)


def test_a_non_empty_out_warns_as_pytorch_does(td: object) -> None:
    a = torch.ones(3, device=D)
    out = torch.zeros(2, device=D)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch.neg(a, out=out)
    assert out.shape == (3,)
    torch.testing.assert_close(out.cpu(), -torch.ones(3))


def test_an_empty_out_resizes_quietly(td: object) -> None:
    out = torch.empty(0, device=D)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        torch.neg(torch.ones(2, 2, device=D), out=out)
    assert out.shape == (2, 2)


def test_resize_of_a_tensor_requiring_grad_is_refused(td: object) -> None:
    x = torch.ones(3, device=D, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        x.resize_(4)


def test_the_functional_resize_leaves_its_input(td: object) -> None:
    def program(dev: str) -> list:
        x = torch.arange(6.0, device=dev)
        y = torch.ops.aten.resize.default(x, [2, 2])
        return [x, y]

    _both(program)
