"""``_ctc_loss`` and ``_ctc_loss_backward`` (both overloads: lengths as int lists, or as
tensors, which ``ctc_loss`` passes for tensor subclasses such as the device's) as the daemon's
rows of the same names (runtime/ops/ctc_loss_ops.cc), so ``F.ctc_loss`` and ``nn.CTCLoss`` train
on the daemon. The rows take the lengths as int64 tensors (a list is uploaded) and
log_alpha's width as ``max_target_length`` (Note [CTC log_alpha width] in
kernels/cpu/ctc_loss.h): for int lists the largest length, as PyTorch's meta function has it;
for tensors, which the client cannot read without waiting, the most the targets' shape allows
(this module's meta functions, PyTorch having none). int32 targets decline to the CPU
fallback."""

from __future__ import annotations

from typing import Any, List

import torch

from . import _connection, _meta, _transfer
from ._aten_map import c, rule

aten = torch.ops.aten


def _lengths(v: Any) -> Any:
    """Lengths as an int64 daemon tensor: an int list uploaded, a tensor converted."""
    if isinstance(v, (list, tuple)):
        return _transfer.upload(_connection.session(), torch.tensor(list(v), dtype=torch.int64))
    return v if v.dtype.name == "int64" else c("to", [v], dtype="int64")


def _width_bound(targets: Any) -> int:
    """The largest target length the targets' shape allows: log_alpha's max_target_length
    when the lengths are tensors."""
    return int(targets.shape[1]) if targets.dim() == 2 else int(targets.shape[0])


def _meta_forward(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
                  blank: int = 0, zero_infinity: bool = False) -> Any:
    t, n = log_probs.shape[0], log_probs.shape[1]
    s = _width_bound(targets)
    return (log_probs.new_empty((n,)), log_probs.new_empty((n, t, 2 * s + 1)))


def _meta_backward(grad: Any, log_probs: Any, *args: Any, **kwargs: Any) -> Any:
    return torch.empty_like(log_probs)


_meta.META_FNS[aten._ctc_loss.Tensor] = _meta_forward
_meta.META_FNS[aten._ctc_loss_backward.default] = _meta_backward
_meta.META_FNS[aten._ctc_loss_backward.Tensor] = _meta_backward


def _forward(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int, max_target_length: int) -> Any:
    if targets.dtype.name != "int64":
        return NotImplemented
    return tuple(c("_ctc_loss", [log_probs, targets, _lengths(input_lengths),
                                 _lengths(target_lengths)],
                   blank=int(blank), max_target_length=int(max_target_length)))


@rule(aten._ctc_loss.default)
def _ctc_loss(log_probs: Any, targets: Any, input_lengths: List[int],
              target_lengths: List[int], blank: int = 0, zero_infinity: bool = False) -> Any:
    return _forward(log_probs, targets, input_lengths, target_lengths, blank,
                    max(list(target_lengths), default=0))


@rule(aten._ctc_loss.Tensor)
def _ctc_loss_tensor(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
                     blank: int = 0, zero_infinity: bool = False) -> Any:
    return _forward(log_probs, targets, input_lengths, target_lengths, blank,
                    _width_bound(targets))


@rule(aten._ctc_loss_backward.default, aten._ctc_loss_backward.Tensor)
def _ctc_loss_backward(grad: Any, log_probs: Any, targets: Any, input_lengths: Any,
                       target_lengths: Any, neg_log_likelihood: Any, log_alpha: Any,
                       blank: int, zero_infinity: bool = False) -> Any:
    if targets.dtype.name != "int64":
        return NotImplemented
    return c("_ctc_loss_backward",
             [grad, log_probs, targets, _lengths(input_lengths), _lengths(target_lengths),
              neg_log_likelihood, log_alpha], blank=int(blank),
             zero_infinity=bool(zero_infinity))
