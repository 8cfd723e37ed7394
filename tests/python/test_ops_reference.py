"""Every op of the daemon's catalog against PyTorch, through the Python client.

Table-driven (cases in op_cases.py): each case runs the daemon's op by its catalog name through
``tensord.CatalogFunction`` (so the daemon's row is what is tested, not a client wrapper) on
random inputs including broadcasting, non-contiguous, zero-size and 0-d tensors, and compares
dtype, shape and values with torch, with tolerances by dtype. Each case runs on every device of
the daemon (the ``device`` fixture, conftest.py: cuda:0 skips without a GPU), always against
PyTorch on the CPU. ``test_every_catalog_op_has_a_case``
fails when an op lands without a reference case. Gradients are checked by the autograd suite.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tensord as td
from helpers import TD, TORCH, from_torch
from op_cases import NC, Case, cases
from op_cases_linalg import CPU_ONLY

pytestmark = pytest.mark.usefixtures("session")

CASES = cases()
TOL = {torch.float32: (2e-5, 1e-5), torch.float64: (1e-10, 1e-10),
       torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)}
# On CUDA (against PyTorch on the CPU): other summation orders (block reductions, cuBLAS and
# cuDNN tilings) and the device's math library; half dtypes may round once more differently.
TOL_CUDA = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-10),
            torch.float16: (4e-3, 2e-3), torch.bfloat16: (3.2e-2, 2e-2)}


def _upload(v: Any) -> Any:
    if isinstance(v, NC):  # the daemon holds t through a transposed view
        base = from_torch(v.t.transpose(0, -1).contiguous())
        out = td.CatalogFunction("transpose")(base, dim0=0, dim1=-1)
        assert tuple(out.shape) == tuple(v.t.shape)
        return out
    if isinstance(v, torch.Tensor):
        return from_torch(v)
    if isinstance(v, list):
        return [_upload(x) for x in v]
    return v


def _plain(v: Any) -> Any:
    if isinstance(v, NC):
        return v.t
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _td_kwargs(kwargs: dict) -> dict:
    return {k: (TD[v] if isinstance(v, torch.dtype) else v) for k, v in kwargs.items()}


def _compare(got: Any, want: Any, rtol: Any = None, device: str = "cpu") -> None:
    if isinstance(want, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _compare(g, w, rtol, device)
        return
    if not isinstance(want, torch.Tensor):
        want = torch.tensor(want)
    assert got.dtype is TD[want.dtype], f"dtype {got.dtype} != torch's {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert str(got.device) == device, f"the result is on {got.device}, not {device}"
    g = got.numpy()
    w = want.float().numpy() if want.dtype == torch.bfloat16 else want.numpy()
    if want.dtype.is_floating_point:
        r, a = (TOL if device == "cpu" else TOL_CUDA)[want.dtype]
        np.testing.assert_allclose(g, w, rtol=max(rtol or 0, r), atol=a, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def _id(case: Case) -> str:
    def d(v: Any) -> str:
        if isinstance(v, NC):
            return "nc" + d(v.t)
        if isinstance(v, torch.Tensor):
            return f"{str(v.dtype)[6:]}{list(v.shape)}"
        if isinstance(v, list):
            return "[" + ",".join(d(x) for x in v) + "]"
        return repr(v)
    kw = ",".join(f"{k}={v}" for k, v in case.kwargs.items())
    return f"{case.op}({','.join(d(a) for a in case.args)}{';' + kw if kw else ''})"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_op_matches_torch(case: Case, device: str) -> None:
    if case.op not in td.default_session().catalog:
        pytest.fail(f"the daemon has no op '{case.op}'")
    if device != "cpu" and case.op in CPU_ONLY:
        pytest.skip(f"{case.op} has no CUDA kernel (KnownCpuOnly)")
    args = [_upload(a) for a in case.args]
    kwargs = _td_kwargs(case.kwargs)
    if case.nout is not None:
        kwargs["_num_outputs"] = case.nout
    got = td.CatalogFunction(case.op)(*args, **kwargs)
    ref = case.ref or getattr(torch, case.op, None) or getattr(torch.nn.functional, case.op)
    plain = [_plain(a) for a in case.args]
    try:
        want = ref(*plain, **case.kwargs)
    except TypeError:  # torch.maximum & co take no Python scalars: as 0-d tensors
        want = ref(*[torch.tensor(a) if isinstance(a, (int, float)) else a for a in plain],
                   **case.kwargs)
    if isinstance(want, tuple) and hasattr(want, "values") and case.nout == 2:
        want = (want.values, want.indices)
    if case.check is not None:
        case.check(got, want)
    else:
        _compare(got, want, case.rtol, device)


def test_in_place_ops_write_through_views() -> None:
    base = torch.arange(12.0).reshape(3, 4)
    x = from_torch(base)
    row = x[1]
    td.CatalogFunction("mul_")(row, 10)
    td.CatalogFunction("add_")(x[:, ::2], 1)
    want = base.clone()
    want[1] *= 10
    want[:, ::2] += 1
    _compare(x, want)
    y = td.CatalogFunction("expand")(from_torch(torch.ones(1, 3)), size=(2, 3))
    with pytest.raises(td.Error, match="single memory location"):
        td.CatalogFunction("add_")(y, 1).numpy()


def test_invalid_calls_are_clear_errors() -> None:
    a = from_torch(torch.ones(2, 3))
    for fn, match in [
        (lambda: td.CatalogFunction("mm")(a, a), "expected|cannot be multiplied"),
        (lambda: td.CatalogFunction("softmax")(a, dim=3), "out of range"),
        (lambda: td.CatalogFunction("gather")(a, a, dim=0), "int64"),
        (lambda: td.CatalogFunction("zeros")(shape=(2, -1)), "negative|invalid|>= 0"),
        (lambda: td.CatalogFunction("index_select")(a, from_torch(torch.tensor([5])), dim=1),
         "out of bounds"),
    ]:
        with pytest.raises(td.Error, match=match):
            fn().numpy()


def test_every_catalog_op_has_a_case() -> None:
    catalog = set(td.default_session().catalog)
    covered = {c.op for c in CASES}
    missing = sorted(catalog - covered)
    assert not missing, f"catalog ops without a reference case in op_cases.py: {missing}"
