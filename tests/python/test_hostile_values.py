"""Values a tenant controls inside tensors (indices, lengths, offsets, targets, pivots, NaN and
huge coordinates, histogram edges, resampling scales) in the rows whose kernels index memory by
them: each bad value is a clear error naming the op and the value (or, where PyTorch defines a
result, that result), and the session and the daemon go on. Under tools/test.sh the daemon is
the ASan + UBSan build, so a kernel that reads or writes outside its tensors on these inputs fails
here."""

from __future__ import annotations

from typing import Any, Callable, Dict

import numpy as np
import pytest

import tensord as td
from tensord._calls import call

pytestmark = pytest.mark.usefixtures("session")


def f(*shape: int) -> td.Tensor:
    return td.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def ints(values: Any, dtype: Any = np.int64) -> td.Tensor:
    return td.tensor(np.array(values, dtype=dtype))


# name -> (the call, words its error must hold)
BAD: Dict[str, tuple] = {
    "bag index past the rows": (
        lambda: call("_embedding_bag", [f(5, 3), ints([0, 7, 2]), ints([0, 2])], {"mode": 0}),
        "indices[1] is 7"),
    "bag negative index": (
        lambda: call("_embedding_bag", [f(5, 3), ints([0, -9, 2]), ints([0, 2])], {"mode": 0}),
        "indices[1] is -9"),
    "bag offsets decreasing": (
        lambda: call("_embedding_bag", [f(5, 3), ints([0, 1, 2]), ints([0, 3, 1])],
                     {"mode": 1}),
        "offsets must not decrease"),
    "bag offset past the indices": (
        lambda: call("_embedding_bag", [f(5, 3), ints([0, 1, 2]), ints([0, 99])], {"mode": 2}),
        "99"),
    "ctc target past the classes": (
        lambda: call("_ctc_loss", [f(6, 2, 4), ints([[1, 9], [2, 3]]), ints([6, 6]),
                                   ints([2, 2])], {"blank": 0, "max_target_length": 2}),
        "target 9"),
    "ctc input length past T": (
        lambda: call("_ctc_loss", [f(6, 2, 4), ints([[1, 2], [2, 3]]), ints([60, 6]),
                                   ints([2, 2])], {"blank": 0, "max_target_length": 2}),
        "(60)"),
    "ctc target length past the width": (
        lambda: call("_ctc_loss", [f(6, 2, 4), ints([[1, 2], [2, 3]]), ints([6, 6]),
                                   ints([50, 2])], {"blank": 0, "max_target_length": 2}),
        "(50)"),
    "ctc negative lengths": (
        lambda: call("_ctc_loss", [f(6, 2, 4), ints([[1, 2], [2, 3]]), ints([-6, 6]),
                                   ints([-2, 2])], {"blank": 0, "max_target_length": 2}),
        "(-6)"),
    "ctc blank past the classes": (
        lambda: call("_ctc_loss", [f(6, 2, 4), ints([[1, 2], [2, 3]]), ints([6, 6]),
                                   ints([2, 2])], {"blank": 77, "max_target_length": 2}),
        "77"),
    "segment lengths past the axis": (
        lambda: call("segment_reduce", [f(6, 3), ints([4, 9])], {"reduce": "sum"}),
        "outside the axis"),
    "segment negative length": (
        lambda: call("segment_reduce", [f(6, 3), ints([-4, 10])], {"reduce": "max"}),
        "non-negative"),
    "segment unsafe lengths past the axis": (
        lambda: call("segment_reduce", [f(6, 3), ints([40, 90])],
                     {"reduce": "sum", "unsafe": True}),
        "outside the axis"),
    "segment offsets decreasing": (
        lambda: call("segment_reduce", [f(6, 3), ints([0, 5, 2, 6])],
                     {"reduce": "mean", "offsets": True}),
        "outside the axis"),
    "segment unsafe offsets past the axis": (
        lambda: call("segment_reduce", [f(6, 3), ints([0, 50, -2, 600])],
                     {"reduce": "mean", "offsets": True, "unsafe": True}),
        "outside the axis"),
    "histogramdd data with NaN": (
        lambda: call("_histogramdd_from_bin_cts",
                     [td.tensor(np.array([[0, np.nan], [1, 1]], np.float32))], {"bins": [2, 2]}),
        "range [nan, nan] is not finite"),
    "aa resize by a vanishing scale": (
        lambda: call("_upsample_bilinear2d_aa", [f(1, 1, 4, 4)],
                     {"output_size": [2, 2], "scales_w": 1e-300}),
        "makes the filter window too large"),
    "margin target past the classes": (
        lambda: call("multi_margin_loss", [f(3, 4), ints([0, 9, 1])], {}), "target 9"),
    "margin negative target": (
        lambda: call("multi_margin_loss", [f(3, 4), ints([0, -9, 1])], {}), "target -9"),
    "multilabel target past the classes": (
        lambda: call("multilabel_margin_loss_forward",
                     [f(2, 4), ints([[0, 9, -1, 0], [1, 2, 3, 7]])], {}),
        "target 9"),
    "householder_product with too many taus": (
        lambda: call("linalg_householder_product", [f(4, 3), f(9)], {}), "tau"),
    "ormqr with too many taus": (
        lambda: call("ormqr", [f(4, 3), f(9), f(4, 2)], {}), "tau"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_values_are_clear_errors(name: str) -> None:
    fn, words = BAD[name]
    with pytest.raises(td.Error) as e:
        out = fn()
        for o in (out if isinstance(out, tuple) else (out,)):
            o.numpy()
    assert words in str(e.value), str(e.value)
    assert (f(2) + 1).numpy().shape == (2,)  # the session goes on


# Inputs PyTorch gives a result for: the same result's shape, and no memory error (ASan).
DEFINED: Dict[str, Callable[[], Any]] = {
    "grid of NaNs": lambda: call("grid_sampler_3d", [
        f(1, 2, 3, 3, 3), td.tensor(np.full((1, 2, 2, 2, 3), np.nan, np.float32))], {}),
    "grid far outside, reflected": lambda: call("grid_sampler_3d", [
        f(1, 2, 3, 3, 3), td.tensor(np.full((1, 2, 2, 2, 3), 3e38, np.float32))],
        {"padding_mode": 2, "interpolation_mode": 1}),
    "lstsq of NaNs": lambda: call("linalg_lstsq", [td.tensor(np.full((4, 3), np.nan)),
                                                   td.tensor(np.ones((4, 2)))], {})[0],
    # histogramdd: NaN, inf and unsorted edges bin as PyTorch's searches do (in bounds); a
    # range wider than float32 makes the linear estimate inf.
    "histogramdd edges with NaN, inf, unsorted": lambda: call(
        "_histogramdd_from_bin_tensors",
        [f(40, 2), td.tensor(np.array([-1, np.nan, 0.5, -3, np.inf], np.float32)),
         td.tensor(np.array([-np.inf, 2, 1, np.nan], np.float32))], {}),
    "histogramdd range past float32": lambda: call(
        "_histogramdd_from_bin_cts",
        [td.tensor(np.array([[3e38, 0], [-3e38, 1], [0, 0.5]], np.float32))],
        {"bins": [5, 3], "range": [-3.4e38, 3.4e38, 0.0, 1.0]}),
    "bag padding_idx past the rows": lambda: call(
        "_embedding_bag", [f(5, 3), ints([0, 1, 2]), ints([0, 1])],
        {"mode": 0, "padding_idx": 2 ** 62})[0],
}


@pytest.mark.parametrize("name", sorted(DEFINED))
def test_defined_edge_values_run(name: str) -> None:
    out = DEFINED[name]()
    assert out.numpy().shape == tuple(out.shape)


def test_ldl_solve_pivots_outside_the_matrix_do_not_reach_lapack() -> None:
    # LAPACK's sytrs swaps rows by the pivots it is given: [5, -9, 100] on a 3 x 3 would index
    # rows that do not exist. The kernel keeps only pivots LAPACK can follow (identity
    # elsewhere), so with LD = I the solution is B.
    x = call("linalg_ldl_solve", [td.tensor(np.eye(3)), ints([5, -9, 100], np.int32),
                                  td.tensor(np.arange(3.0).reshape(3, 1))], {})
    np.testing.assert_array_equal(x.numpy(), np.arange(3.0).reshape(3, 1))
