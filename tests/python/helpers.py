"""Shared helpers of the real-daemon tests: conversions to PyTorch and comparisons."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import tensord as td

TORCH = {td.float32: torch.float32, td.float64: torch.float64, td.float16: torch.float16,
         td.bfloat16: torch.bfloat16, td.int64: torch.int64, td.int32: torch.int32,
         td.int8: torch.int8, td.uint8: torch.uint8, td.bool: torch.bool}
TD = {v: k for k, v in TORCH.items()}


def line() -> int:
    """The caller's line number (for call-site assertions)."""
    return sys._getframe(1).f_lineno


def to_torch(t: td.Tensor) -> torch.Tensor:
    """A tensord tensor's values as a torch tensor of the same dtype."""
    return torch.from_numpy(t.numpy().copy()).to(TORCH[t.dtype])


def shapeless(t: td.Tensor) -> td.Tensor:
    """``t``'s values as an op's result, whose shape the client learns only from the daemon's
    Ack (an upload's it knows at once: Note [Uploads know their meta])."""
    out = t * 1
    assert out._info is None, "the client knew an op result's shape before its Ack"
    return out


def from_torch(t: torch.Tensor) -> td.Tensor:
    """A torch tensor's values uploaded with the same dtype."""
    if t.dtype == torch.bfloat16:
        return td.tensor(t.float().numpy(), dtype=td.bfloat16)
    return td.tensor(t.numpy(), dtype=TD[t.dtype])


def assert_same(got: td.Tensor, want: torch.Tensor, rtol: float = 1e-5,
                atol: float = 1e-6) -> None:
    """Same dtype, shape and values (within tolerance for floats)."""
    assert got.dtype is TD[want.dtype], (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    g = got.numpy()
    w = want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()
    assert g.shape == w.shape
    if want.dtype.is_floating_point:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(g, w)


def needs(*ops: str) -> None:
    """Skips the test unless the daemon's catalog has every one of ``ops``."""
    missing = [o for o in ops if o not in td.default_session().catalog]
    if missing:
        pytest.skip(f"the daemon's catalog has no {missing} yet")


def randt(shape, dtype=torch.float32, seed: int = 0) -> torch.Tensor:
    """A random torch tensor: normal floats, small ints, random bools."""
    g = np.random.default_rng(seed + 7 * len(shape))
    if dtype.is_floating_point:
        return torch.from_numpy(g.standard_normal(shape)).to(dtype)
    if dtype == torch.bool:
        return torch.from_numpy(g.integers(0, 2, shape).astype(bool))
    lo = 0 if dtype == torch.uint8 else -20
    return torch.from_numpy(g.integers(lo, 20, shape)).to(dtype)
