"""add_/sub_/mul_/div_ writing through a contiguous CPU float tensor (Note [In-place
arithmetic] in runtime/ops/inplace_ops.cc) against PyTorch: alpha, the tensor with itself,
an operand overlapping it at another offset (the twin-and-copy path), float64 (the version
bump: op_table_test's InPlaceOpsWriteThroughAndBumpVersions)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tensord as td
from helpers import from_torch

pytestmark = pytest.mark.usefixtures("session")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_torch(dtype) -> None:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 5, generator=g, dtype=dtype), torch.randn(6, 5, generator=g,
                                                                    dtype=dtype) + 3
    ta, tb = from_torch(a), from_torch(b)
    a.add_(b, alpha=2), ta.add_(tb, alpha=2)
    a.sub_(b, alpha=0.5), ta.sub_(tb, alpha=0.5)
    a.mul_(b), ta.mul_(tb)
    a.div_(b), ta.div_(tb)
    a.mul_(a), ta.mul_(ta)  # itself, element for element
    np.testing.assert_allclose(ta.numpy(), a.numpy(), rtol=1e-6)


def test_an_overlapping_operand_reads_the_old_values() -> None:
    a = torch.arange(8, dtype=torch.float32)
    ta = from_torch(a)
    a[1:].add_(a[:-1].clone()), ta[1:].add_(ta[:-1])
    np.testing.assert_array_equal(ta.numpy(), a.numpy())

