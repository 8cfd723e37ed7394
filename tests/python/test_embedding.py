"""Embedding's weight gradient (runtime/ops/embedding_ops.cc: the embedding_dense_backward row,
Note [Embedding gradient rows]) against PyTorch: padding_idx, scale_grad_by_freq, int32 and
int64 indices, a non-contiguous output gradient, accumulation into an existing ``.grad``, a
table large enough to be split over the daemon's threads; an index out of range is an error
that names embedding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tensord as td
from helpers import from_torch, to_torch

pytestmark = pytest.mark.usefixtures("session")


def _pair(weight: torch.Tensor) -> tuple:
    return weight.clone().requires_grad_(True), td.tensor(weight.numpy(), requires_grad=True)


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
@pytest.mark.parametrize("freq", [False, True])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_weight_grad_matches_torch(padding_idx, freq, index_dtype) -> None:
    g = torch.Generator().manual_seed(1)
    weight = torch.randn(7, 5, generator=g)
    idx = torch.tensor([[2, 6, 0, 2], [6, 2, 3, 1]], dtype=index_dtype)
    base = torch.randn(4, 2, 5, generator=g)
    go = base.transpose(0, 1)
    tw, dw = _pair(weight)
    want = torch.nn.functional.embedding(idx, tw, padding_idx, scale_grad_by_freq=freq)
    got = td.nn.functional.embedding(from_torch(idx), dw, padding_idx,
                                     scale_grad_by_freq=freq)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy())
    want.backward(go)
    got.backward(from_torch(base).transpose(0, 1))  # a non-contiguous gradient
    np.testing.assert_allclose(dw.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_grads_accumulate_into_an_existing_grad() -> None:
    g = torch.Generator().manual_seed(2)
    weight = torch.randn(9, 3, dtype=torch.float64, generator=g)
    tw, dw = _pair(weight)
    for seed in (3, 4):
        idx = torch.randint(0, 9, (5,), generator=torch.Generator().manual_seed(seed))
        go = torch.randn(5, 3, dtype=torch.float64, generator=g)
        torch.nn.functional.embedding(idx, tw).backward(go)
        td.nn.functional.embedding(from_torch(idx), dw).backward(from_torch(go))
    np.testing.assert_allclose(dw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_a_table_split_over_threads() -> None:
    g = torch.Generator().manual_seed(5)
    weight = torch.randn(3000, 48, generator=g)
    idx = torch.randint(0, 3000, (40, 100), generator=g)
    go = torch.randn(40, 100, 48, generator=g)
    tw, dw = _pair(weight)
    torch.nn.functional.embedding(idx, tw, padding_idx=7).backward(go)
    td.nn.functional.embedding(from_torch(idx), dw, padding_idx=7).backward(from_torch(go))
    np.testing.assert_allclose(dw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert not to_torch(dw.grad)[7].any()


def test_module_trains_with_padding_and_frequency_scaling() -> None:
    temb = torch.nn.Embedding(6, 4, padding_idx=1, scale_grad_by_freq=True)
    emb = td.nn.Embedding(6, 4, padding_idx=1, scale_grad_by_freq=True)
    emb.load_state_dict({k: v.detach().numpy() for k, v in temb.state_dict().items()})
    idx = torch.tensor([[1, 4, 4], [0, 4, 5]])
    temb(idx).sum().backward()
    emb(from_torch(idx)).sum().backward()
    np.testing.assert_allclose(emb.weight.grad.numpy(), temb.weight.grad.numpy())


def test_an_index_out_of_range_names_embedding() -> None:
    w = td.tensor(np.ones((4, 2), np.float32), requires_grad=True)
    with pytest.raises(Exception, match="embedding") as e:
        td.nn.functional.embedding(td.tensor(np.array([0, 4])), w).numpy()
    assert "4" in str(e.value)
