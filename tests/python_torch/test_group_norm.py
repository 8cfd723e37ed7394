"""group_norm on the tensord device: aten.native_group_norm and its backward are the daemon's
fused rows on the CPU (runtime/ops/group_norm_ops.cc), against CPU PyTorch's values and
gradients; a bias alone (torch's decomposition) and bfloat16 (computed in float32) too."""

from __future__ import annotations

from typing import Any, List

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture
def fused_calls(td: object, monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The daemon ops the nn rules call, in order."""
    from tensord.torch import _aten_map_nn
    calls: List[str] = []
    real = _aten_map_nn.c

    def spy(name: str, *a: Any, **k: Any) -> Any:
        calls.append(name)
        return real(name, *a, **k)

    monkeypatch.setattr(_aten_map_nn, "c", spy)
    return calls


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12),
                                       (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_group_norm_runs_the_fused_rows(fused_calls: List[str], dtype: Any, tol: float,
                                        affine: str) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, 5, 3, generator=g).to(dtype)
    w = (torch.rand(6, generator=g) + 0.5).to(dtype) if affine != "none" else None
    b = torch.randn(6, generator=g).to(dtype) if affine == "both" else None
    cpu = [t.clone().requires_grad_() for t in (x, w, b) if t is not None]
    dev = [t.detach().to("tensord").requires_grad_() for t in cpu]
    grads = torch.randn(4, 6, 5, 3, generator=g).to(dtype)
    outs = []
    for ts, gy in ((cpu, grads), (dev, grads.to("tensord"))):
        it = iter(ts[1:])
        y = torch.nn.functional.group_norm(ts[0], 3, next(it) if w is not None else None,
                                           next(it) if b is not None else None, eps=1e-4)
        y.backward(gy)
        outs.append([y] + [t.grad for t in ts])
    for want, got in zip(*outs):
        torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)
    assert "native_group_norm" in fused_calls and "native_group_norm_backward" in fused_calls


def test_group_norm_bias_alone_is_decomposed(fused_calls: List[str]) -> None:
    x = torch.randn(2, 4, 3, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    xd, bd = (t.detach().to("tensord").requires_grad_() for t in (x, b))
    ref = torch.ops.aten.native_group_norm(x, torch.ones(4), b, 2, 4, 3, 2, 1e-5)[0]
    got = torch.ops.aten.native_group_norm(xd, None, bd, 2, 4, 3, 2, 1e-5)[0]
    torch.testing.assert_close(got.cpu(), ref.detach())
    assert "native_group_norm" not in fused_calls
