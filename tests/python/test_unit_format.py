"""repr(tensor) matches PyTorch's text (no daemon needed: the formatter works on NumPy values)."""

import numpy as np
import pytest
import torch

import tensord
from tensord import _dtype
from tensord._format import format_tensor

TD = {torch.float32: tensord.float32, torch.float64: tensord.float64,
      torch.float16: tensord.float16, torch.bfloat16: tensord.bfloat16,
      torch.int64: tensord.int64, torch.int32: tensord.int32, torch.int8: tensord.int8,
      torch.uint8: tensord.uint8, torch.bool: tensord.bool}

rng = np.random.default_rng(1)
CASES = [
    torch.tensor([[1.0, 2.0]]),
    torch.tensor(3.0),
    torch.tensor(7),
    torch.tensor(True),
    torch.tensor([]),
    torch.zeros(0, 3),
    torch.zeros(2, 0, dtype=torch.int64),
    torch.tensor([1.5, -2.25, 1000.0]),
    torch.tensor([1e-5, 1.0]),
    torch.tensor([1e9, 1.0]),
    torch.tensor([1.0, 1e4]),
    torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
    torch.tensor([float("nan"), 2.5]),
    torch.tensor([0.0, -0.0]),
    torch.tensor([True, False]),
    torch.tensor([[1, -20], [300, 4]]),
    torch.tensor([1, 2], dtype=torch.int32),
    torch.tensor([1, 2], dtype=torch.uint8),
    torch.tensor([1.5, 2], dtype=torch.float64),
    torch.tensor([1.5, 2], dtype=torch.float16),
    torch.tensor([1.5, 2], dtype=torch.bfloat16),
    torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)),
    torch.from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32)),
    torch.from_numpy(rng.standard_normal((40,)).astype(np.float32)),
    torch.from_numpy(rng.standard_normal((2000,)).astype(np.float32)),
    torch.from_numpy(rng.standard_normal((50, 50)).astype(np.float64)),
    torch.from_numpy(rng.integers(-5, 5, (11, 12, 13))),
    torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32) * 1e-6),
]


def _values(t: torch.Tensor) -> np.ndarray:
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("t", CASES, ids=lambda t: f"{t.dtype}{list(t.shape)}")
def test_repr_matches_torch(t: torch.Tensor) -> None:
    want = repr(t).replace("torch.", "tensord.")
    assert format_tensor(_values(t), TD[t.dtype], "cpu") == want


def test_repr_suffixes_match_torch() -> None:
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert format_tensor(t.detach().numpy(), tensord.float32, "cpu", True) == repr(t)
    assert format_tensor(np.array([1.0, 2.0], np.float32), tensord.float32, "cuda:0") == \
        "tensor([1., 2.], device='cuda:0')"
    wide = torch.from_numpy(np.arange(20, dtype=np.float64) / 3)
    assert format_tensor(wide.numpy(), tensord.float64, "cpu") == \
        repr(wide).replace("torch.", "tensord.")


def test_bfloat16_round_trip_matches_torch() -> None:
    x = np.concatenate([rng.standard_normal(1000).astype(np.float32) * 100,
                        np.array([0.0, -0.0, np.inf, -np.inf, 1e-40], np.float32)])
    wire = _dtype.to_wire_bytes(x, tensord.bfloat16)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(wire, want)
    back = _dtype.from_wire_bytes(wire.tobytes(), tensord.bfloat16, x.shape)
    np.testing.assert_array_equal(back, torch.from_numpy(x).to(torch.bfloat16).float().numpy())
    assert np.isnan(_dtype.from_wire_bytes(
        _dtype.to_wire_bytes(np.array([np.nan], np.float32), tensord.bfloat16).tobytes(),
        tensord.bfloat16, (1,)))[0]
