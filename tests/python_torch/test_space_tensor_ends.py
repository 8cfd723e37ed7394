"""``linspace``/``logspace`` with tensor ends and the functional ``copy`` on the device
(``tensord/torch/_special.py``): values and devices as PyTorch's on the CPU, with no CPU fallback
(conftest's ``no_fallback``)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


@pytest.mark.parametrize("steps", [1, 2, 7])
@pytest.mark.parametrize("space", ["linspace", "logspace"])
def test_tensor_ends_on_the_device(td: object, space: str, steps: int) -> None:
    fn = getattr(torch, space)
    start, end = torch.tensor(-1.5), torch.tensor(2.25)
    want = fn(start, end, steps)
    got = fn(start.to(D), end.to(D), steps, device=D)
    assert got.device.type == D
    torch.testing.assert_close(got.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("space", ["linspace", "logspace"])
def test_device_ends_for_a_cpu_result(td: object, space: str, dtype: torch.dtype) -> None:
    """PyTorch's rule: the ends' values make the result on the device asked for."""
    fn = getattr(torch, space)
    start, end = torch.tensor(0.5), torch.tensor(3.0)
    want = fn(start, end, 6, dtype=dtype, device="cpu")
    got = fn(start.to(D), end, 6, dtype=dtype, device="cpu")
    assert got.device.type == "cpu"
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_functional_copy_broadcasts_and_casts(td: object) -> None:
    dst = torch.zeros(2, 3, dtype=torch.int64)
    src = torch.tensor([1.0, 2.0, 3.0])
    want = torch.ops.aten.copy.default(dst, src)
    got = torch.ops.aten.copy.default(dst.to(D), src.to(D))
    assert got.device.type == D and got.dtype == torch.int64
    torch.testing.assert_close(got.cpu(), want)
