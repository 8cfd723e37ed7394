"""as_strided on the daemon through the native client: values and the daemon's own gradient
(Note [as_strided backward]) against PyTorch, for overlapping, stride-0, offset and
non-contiguous geometries, and its bounds."""

from __future__ import annotations

import pytest
import torch

import tensord as td
from helpers import from_torch, to_torch

pytestmark = pytest.mark.usefixtures("session")

CASES = [
    # (input maker, size, stride, storage_offset)
    (lambda x: x, (3, 4), (2, 1), 5),          # overlapping output windows
    (lambda x: x, (2, 3), (7, 0), 1),          # stride 0 in the output
    (lambda x: x, (4,), (7,), 0),              # a diagonal
    (lambda x: x.t(), (3, 2), (1, 6), 2),      # a non-contiguous input
    (lambda x: x[1:], (2, 2), (1, 1), 8),      # an input at an offset, output overlapping
    (lambda x: x.reshape(-1)[:6].expand(2, 6), (2, 3), (1, 2), 0),  # an overlapping input
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_and_gradient_match_pytorch(case: int) -> None:
    make, size, stride, offset = CASES[case]
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(case), dtype=torch.float64)
    w = torch.linspace(-1, 2, torch.Size(size).numel(), dtype=torch.float64).reshape(size)
    leaf = x.clone().requires_grad_()
    want = make(leaf).as_strided(size, stride, offset)
    (want_grad,) = torch.autograd.grad((want * w).sum(), [leaf])
    t = from_torch(x).requires_grad_()
    got = td.as_strided(make(t), size=list(size), stride=list(stride), storage_offset=offset)
    (got * from_torch(w)).sum().backward()
    torch.testing.assert_close(to_torch(got), want.detach())
    torch.testing.assert_close(to_torch(t.grad), want_grad)


def test_geometry_outside_the_storage_is_an_error_naming_the_op() -> None:
    t = from_torch(torch.arange(6.0))
    bad = td.as_strided(t[2:], size=[3], stride=[2], storage_offset=2)  # reaches element 6
    with pytest.raises(td.Error, match=r"as_strided at test_strided_ops.py:\d+: sizes \[3\], "
                       r"strides \[2\] and storage offset 2 reach element 6 of a storage of 6 "
                       r"elements"):
        bad.numpy()
    ok = td.as_strided(t[2:], size=[3], stride=[2], storage_offset=0)
    assert to_torch(ok).tolist() == [0.0, 2.0, 4.0]
