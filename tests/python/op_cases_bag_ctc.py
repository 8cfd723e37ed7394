"""Reference cases of op_cases.py for the embedding, embedding_bag and CTC loss rows
(runtime/ops/embedding_ops.cc, embedding_bag_ops.cc, ctc_loss_ops.cc): named and shaped as
ATen's ops, so the references are ATen's own. Where the daemon defines what ATen's CPU kernels
leave unset or shape otherwise (the meta function's geometry), the reference derives the same
from ATen's values: embedding_bag's offset2bag and bag_size from its mean mode in float64 (the
path that fills them), max_indices -1 for a bag with nothing in it (Note [Embedding bag
geometry]); log_alpha's unreached entries -inf (Note [CTC log_alpha width]). The rows are
CPU-only (KnownCpuOnly): cuda:0 skips them; embedding itself runs everywhere (its gradient
composes scatter_add off the CPU)."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import torch

from op_case_inputs import NC, Case, R

F64 = torch.float64
aten = torch.ops.aten

# 7 picks from 6 rows into bags [0, 2), [2, 2) (empty), [2, 5), [5, 7); row 3 repeats.
INDICES = torch.tensor([1, 3, 0, 3, 5, 2, 3])
OFFSETS = torch.tensor([0, 2, 2, 5])
LAST = torch.tensor([0, 2, 2, 5, 7])  # include_last_offset: the same bags


class _ScaleRows(torch.autograd.Function):
    """The identity whose gradient divides each row by a count: scale_grad_by_freq as later
    PyTorch releases compute it (torch 1.13's CPU kernel divides some rows by another row's
    count; test_nn_embedding_bag.py's test_scale_grad_by_freq shows it)."""

    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(counts)
        return w.clone()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Any:
        (counts,) = ctx.saved_tensors
        return g / counts, None


def _counts(indices: torch.Tensor, rows: int) -> torch.Tensor:
    return torch.bincount(indices, minlength=rows).clamp(min=1).unsqueeze(1)


def _geometry(w: torch.Tensor, i: torch.Tensor, o: torch.Tensor, mode: int, last: bool,
              pad: int) -> tuple:
    """(offset2bag, bag_size, max_indices) in the daemon's geometry, from ATen's values."""
    wd = w.detach().to(F64)
    _, o2b, size, _ = aten._embedding_bag(wd, i, o, False, 1, False, None, last, pad)
    size = torch.cat([size, size.new_zeros(o.numel() - size.numel())])  # one per offset
    if mode != 2:
        return o2b, size, torch.zeros(0, dtype=torch.int64)
    mx = aten._embedding_bag(wd, i, o, False, 2, False, None, last, pad)[3].clone()
    mx[size[:mx.shape[0]] == 0] = -1
    return o2b, size, mx


def _embedding_bag(w: torch.Tensor, i: torch.Tensor, o: torch.Tensor,
                   psw: Optional[torch.Tensor] = None, scale_grad_by_freq: bool = False,
                   mode: int = 0, include_last_offset: bool = False,
                   padding_idx: int = -1) -> tuple:
    scale = scale_grad_by_freq and mode != 2  # ATen's max-mode backward never scales
    wr = _ScaleRows.apply(w, _counts(i, w.shape[0]).to(w.dtype)) if scale else w
    out = aten._embedding_bag(wr, i, o, False, mode, False, psw, include_last_offset,
                              padding_idx)[0]
    return (out, *_geometry(w, i, o, mode, include_last_offset, padding_idx))


def _dense_backward(g: torch.Tensor, i: torch.Tensor, o2b: torch.Tensor, size: torch.Tensor,
                    mx: torch.Tensor, psw: Optional[torch.Tensor] = None, num_weights: int = 0,
                    scale_grad_by_freq: bool = False, mode: int = 0,
                    padding_idx: int = -1) -> torch.Tensor:
    grad = aten._embedding_bag_dense_backward(g, i, o2b, size, mx, num_weights, False, mode,
                                              psw, padding_idx)
    scale = scale_grad_by_freq and mode != 2
    return grad / _counts(i, num_weights).to(g.dtype) if scale else grad


def _psw_backward(g: torch.Tensor, w: torch.Tensor, i: torch.Tensor, o: torch.Tensor,
                  o2b: torch.Tensor, mode: int = 0, padding_idx: int = -1) -> torch.Tensor:
    return aten._embedding_bag_per_sample_weights_backward(g, w, i, o, o2b, mode, padding_idx)


def _bag(w: Any, o: torch.Tensor = OFFSETS, psw: Any = None, **kw: Any) -> Case:
    args = [w, INDICES, o] + ([psw] if psw is not None else [])
    return Case("_embedding_bag", args, kw, ref=_embedding_bag)


# ---------------------------------------------------------------------------------- embedding
def embedding_cases() -> List[Case]:
    """torch.embedding with int64/int32 indices, padding_idx and scale_grad_by_freq (their
    gradients: test_autograd_reference.py), and ATen's embedding_dense_backward row on a
    non-contiguous grad."""
    idx = torch.tensor([[1, 3, 0], [3, 5, 3]])
    c = [Case("embedding", [R(6, 4), idx]),
         Case("embedding", [R(6, 3, dtype=F64, seed=1), idx.to(torch.int32)]),
         Case("embedding", [R(6, 4, seed=2), idx], {"padding_idx": 3}),
         Case("embedding", [R(6, 4, seed=3), idx.to(torch.int32)],
              {"scale_grad_by_freq": True}),
         Case("embedding", [R(6, 3, dtype=F64, seed=4), idx],
              {"padding_idx": 0, "scale_grad_by_freq": True})]
    dense = aten.embedding_dense_backward
    for dtype, index, pad, freq in ((torch.float32, idx, -1, False),
                                    (F64, idx.to(torch.int32), 3, False),
                                    (torch.float32, idx, 5, True),
                                    (F64, idx.to(torch.int32), -1, True)):
        kw = {"num_weights": 7, "padding_idx": pad, "scale_grad_by_freq": freq}
        c.append(Case("embedding_dense_backward", [R(2, 3, 4, dtype=dtype, seed=5), index], kw,
                      ref=lambda g, i, **k: dense(g, i, k["num_weights"], k["padding_idx"],
                                                 k["scale_grad_by_freq"])))
    c.append(Case("embedding_dense_backward", [NC(R(6, 4, seed=6)), idx.reshape(-1)],
                  {"num_weights": 6},
                  ref=lambda g, i, num_weights: dense(g, i, num_weights, -1, False)))
    return c


def embedding_bag_cases() -> List[Case]:
    c = []
    for mode in (0, 1, 2):
        c += [_bag(R(6, 4), mode=mode), _bag(R(6, 3, dtype=F64, seed=1), mode=mode),
              _bag(NC(R(6, 5, seed=2)), mode=mode, padding_idx=3),
              _bag(R(6, 2, dtype=F64, seed=3), LAST, mode=mode, include_last_offset=True)]
    c += [_bag(R(6, 4, seed=4), psw=R(7, seed=5)),
          _bag(R(6, 3, dtype=F64, seed=6), psw=R(7, dtype=F64, seed=7), padding_idx=0),
          _bag(R(6, 4, seed=8), mode=1, padding_idx=5),
          _bag(R(6, 3, dtype=F64, seed=9), scale_grad_by_freq=True),
          _bag(R(6, 3, seed=10), mode=1, scale_grad_by_freq=True),
          _bag(R(6, 3, dtype=F64, seed=11), mode=2, scale_grad_by_freq=True)]
    # The backward rows on the forward's outputs (the daemon's geometry).
    for mode, dtype, pad in ((0, torch.float32, -1), (1, F64, 3), (2, torch.float32, -1),
                             (2, F64, 1)):
        w = R(6, 3, dtype=dtype, seed=12)
        o2b, size, mx = _geometry(w, INDICES, OFFSETS, mode, False, pad)
        g = R(4, 3, dtype=dtype, seed=13)
        kw = {"num_weights": 6, "mode": mode, "padding_idx": pad}
        c.append(Case("_embedding_bag_dense_backward", [g, INDICES, o2b, size, mx], kw,
                      ref=_dense_backward))
    o2b, size, mx = _geometry(R(6, 3), INDICES, OFFSETS, 0, False, -1)
    c += [Case("_embedding_bag_dense_backward",
               [NC(R(4, 3, seed=14)), INDICES, o2b, size, mx, R(7, seed=15)],
               {"num_weights": 6}, ref=_dense_backward),
          Case("_embedding_bag_dense_backward", [R(4, 2, dtype=F64), INDICES, o2b, size, mx],
               {"num_weights": 7, "scale_grad_by_freq": True}, ref=_dense_backward),
          Case("_embedding_bag_dense_backward", [R(4, 3, dtype=F64), INDICES, o2b, size,
                                                  _geometry(R(6, 3), INDICES, OFFSETS, 2, False,
                                                            -1)[2]],
               {"num_weights": 6, "mode": 2, "scale_grad_by_freq": True}, ref=_dense_backward),
          Case("_embedding_bag_per_sample_weights_backward",
               [R(4, 3, seed=16), R(6, 3, seed=17), INDICES, OFFSETS, o2b], ref=_psw_backward),
          Case("_embedding_bag_per_sample_weights_backward",
               [NC(R(4, 3, dtype=F64, seed=18)), R(6, 3, dtype=F64, seed=19), INDICES, OFFSETS,
                o2b], {"padding_idx": 3}, ref=_psw_backward)]
    return c


# ------------------------------------------------------------------------------------- CTC
PADDED = torch.tensor([[1, 1, 2, 0], [0, 0, 0, 0], [4, 3, 0, 0]])
TARGET_LENGTHS = torch.tensor([3, 0, 2])
INPUT_LENGTHS = torch.tensor([7, 4, 6])
FLAT = torch.cat([PADDED[b, :n] for b, n in enumerate(TARGET_LENGTHS.tolist())])


def _log_probs(t: int, n: int, c: int, dtype: torch.dtype = torch.float32,
               seed: int = 0) -> torch.Tensor:
    return R(t, n, c, dtype=F64, seed=seed).log_softmax(2).to(dtype)


def _ctc_alpha(alpha: torch.Tensor, il: torch.Tensor, tl: torch.Tensor,
               max_target_length: int) -> torch.Tensor:
    """ATen's log_alpha with the entries it leaves unset -inf and as wide as the attribute."""
    a = torch.full((*alpha.shape[:2], 2 * max_target_length + 1), -float("inf"),
                   dtype=alpha.dtype)
    for b, (t, s) in enumerate(zip(il.tolist(), tl.tolist())):
        a[b, :t, :2 * s + 1] = alpha[b, :t, :2 * s + 1]
    return a


def _ctc_loss(lp: torch.Tensor, targets: torch.Tensor, il: torch.Tensor, tl: torch.Tensor,
              max_target_length: int, blank: int = 0, zero_infinity: bool = False) -> tuple:
    nll, alpha = aten._ctc_loss(lp, targets, il, tl, blank, zero_infinity)
    return nll, _ctc_alpha(alpha.detach(), il, tl, max_target_length)


def _ctc_backward(g: torch.Tensor, lp: torch.Tensor, targets: torch.Tensor, il: torch.Tensor,
                  tl: torch.Tensor, nll: torch.Tensor, alpha: torch.Tensor, blank: int = 0,
                  zero_infinity: bool = False) -> torch.Tensor:
    return aten._ctc_loss_backward(g, lp, targets, il, tl, nll, alpha, blank, zero_infinity)


def _ctc_check(got: Any, want: Any) -> None:
    """Values of a case with an infinite loss (its gradient is the backward row's case)."""
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-5, atol=1e-5)


def ctc_cases() -> List[Case]:
    lengths = [INPUT_LENGTHS, TARGET_LENGTHS]
    c = [Case("_ctc_loss", [_log_probs(7, 3, 5), PADDED, *lengths], {"max_target_length": 3},
              ref=_ctc_loss),
         Case("_ctc_loss", [_log_probs(7, 3, 5, F64, 1), FLAT, *lengths],
              {"max_target_length": 3}, ref=_ctc_loss),
         Case("_ctc_loss", [NC(_log_probs(7, 3, 5, seed=2)), PADDED, *lengths],
              {"max_target_length": 5}, ref=_ctc_loss),
         Case("_ctc_loss", [_log_probs(6, 2, 4, F64, 3), torch.tensor([[0, 1, 1], [2, 0, 2]]),
                            torch.tensor([6, 5]), torch.tensor([3, 2])],
              {"max_target_length": 3, "blank": 3}, ref=_ctc_loss)]
    # 2 2 2 2 needs 7 frames, gets 5: an infinite loss; zero_infinity zeroes its gradient.
    inf_targets = torch.tensor([[0, 0, 0, 1], [2, 2, 2, 2], [3, 1, 0, 0]])
    inf_args = [_log_probs(7, 3, 5, F64, 4), inf_targets, torch.tensor([7, 5, 7]),
                torch.tensor([4, 4, 2])]
    inf_kw = {"blank": 4, "zero_infinity": True}
    c.append(Case("_ctc_loss", inf_args, {"max_target_length": 4, **inf_kw}, ref=_ctc_loss,
                  check=_ctc_check))
    for args, kw, s, seed in ((inf_args, inf_kw, 4, 5),
                              ([_log_probs(7, 3, 5, seed=6), PADDED, *lengths], {}, 3, 6),
                              ([_log_probs(7, 3, 5, F64, 7), FLAT, *lengths], {}, 3, 7)):
        nll, alpha = _ctc_loss(*args, max_target_length=s, **kw)
        g = R(3, dtype=args[0].dtype, seed=seed)
        c.append(Case("_ctc_loss_backward", [g, *args, nll, alpha], kw, ref=_ctc_backward))
    return c


# The rows without a CUDA kernel (KnownCpuOnly of runtime/ops/known_cpu_only.cc).
CPU_ONLY = {"embedding_dense_backward", "_embedding_bag", "_embedding_bag_dense_backward",
            "_embedding_bag_per_sample_weights_backward", "_ctc_loss", "_ctc_loss_backward"}
