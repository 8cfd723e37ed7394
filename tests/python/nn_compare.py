"""Module-against-PyTorch checks shared by the nn tests: the same weights (the torch module's
state dict loaded into the tensord one), then forward values and the gradients w.r.t. every
input and every parameter, for one random cotangent."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np
import torch

import tensord as td


def rand(*shape: int, seed: int = 0, low: Optional[float] = None,
         high: Optional[float] = None) -> np.ndarray:
    """float32 normal samples (uniform on [low, high) when given)."""
    g = np.random.default_rng(seed)
    if low is not None:
        return g.uniform(low, high, shape).astype(np.float32)
    return g.standard_normal(shape).astype(np.float32)


def load_torch_weights(tmod: torch.nn.Module, mod: td.nn.Module) -> None:
    """Loads ``tmod``'s state dict into ``mod`` (strict: the names must match)."""
    mod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


def _close(name: str, got: Any, want: Optional[torch.Tensor], rtol: float,
           atol: float) -> None:
    # No gradient (the output does not depend on it) and a zero one are the same
    if want is None or got is None:
        other = got if want is None else want
        assert other is None or not other.numpy().any(), f"{name}: {got} vs PyTorch {want}"
        return
    g = got.numpy() if isinstance(got, td.Tensor) else np.asarray(got)
    w = want.detach().numpy()
    assert g.shape == w.shape, f"{name}: shape {g.shape}, PyTorch {w.shape}"
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def compare_module(mod: Any, tmod: Any, inputs: Sequence[np.ndarray],
                   kwargs: Optional[Dict[str, Any]] = None,
                   torch_kwargs: Optional[Dict[str, Any]] = None, grad_inputs: Sequence[int] = (),
                   rtol: float = 1e-4, atol: float = 1e-5, output: int = -1,
                   load: bool = True) -> None:
    """Runs ``mod(*inputs, **kwargs)`` and ``tmod`` on the same values; compares the output
    (``output``-th of a tuple when >= 0), then, after backward of ``sum(out * cotangent)``,
    the gradients of the inputs listed in ``grad_inputs`` and of every parameter by name.
    ``kwargs`` values that are NumPy arrays are uploaded / made torch tensors."""
    if load:
        load_torch_weights(tmod, mod)
    kwargs = kwargs or {}
    tkw = torch_kwargs if torch_kwargs is not None else kwargs
    tds = [td.tensor(a, requires_grad=i in grad_inputs) for i, a in enumerate(inputs)]
    ts = [torch.tensor(a, requires_grad=i in grad_inputs) for i, a in enumerate(inputs)]
    got = mod(*tds, **{k: td.tensor(v) if isinstance(v, np.ndarray) else v
                       for k, v in kwargs.items()})
    want = tmod(*ts, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                        for k, v in tkw.items()})
    if output >= 0:
        got, want = got[output], want[output]
    _close("output", got, want, rtol, atol)
    cot = rand(*want.shape, seed=99)
    (want * torch.tensor(cot)).sum().backward()
    (got * td.tensor(cot)).sum().backward()
    for i in grad_inputs:
        _close(f"grad of input {i}", tds[i].grad, ts[i].grad, rtol, atol)
    tparams = dict(tmod.named_parameters())
    for name, p in mod.named_parameters():
        _close(f"grad of {name}", p.grad, tparams[name].grad, rtol, atol)


def compare_function(fn: Any, tfn: Any, inputs: Sequence[np.ndarray],
                     grad_inputs: Sequence[int] = (0,), rtol: float = 1e-4,
                     atol: float = 1e-5, **kwargs: Any) -> None:
    """``fn(*inputs, **kwargs)`` against ``tfn`` (values, then the listed inputs' grads)."""
    class _Wrap:
        def __init__(self, f: Any) -> None:
            self.f = f

        def __call__(self, *a: Any, **k: Any) -> Any:
            return self.f(*a, **k)

        def named_parameters(self) -> Any:
            return iter(())

    compare_module(_Wrap(fn), _Wrap(tfn), inputs, kwargs, grad_inputs=grad_inputs, rtol=rtol,
                   atol=atol, load=False)
