"""``embedding_bag`` as ``torch.nn.functional.embedding_bag``: one daemon op (``_embedding_bag``,
runtime/ops/embedding_bag_ops.cc) whose backward the daemon's autograd runs (the weight's
gradient and the per-sample weights'). Signature, defaults and checks are PyTorch's; ``max_norm``
and ``sparse`` gradients are not served by the daemon."""

from __future__ import annotations

from typing import Optional

from .._tensor import Tensor, call

_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None,
                  max_norm: Optional[float] = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None,
                  include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tensor:
    """Sums, means or maxima of bags of ``weight``'s rows picked by the int64 ``input``: a 2-d
    ``input`` is one bag per row (``offsets`` must be None); a 1-d one is cut into bags at
    ``offsets``. ``per_sample_weights`` (sum mode) scale each picked row; rows at
    ``padding_idx`` are left out of their bag (and of a mean's count); an empty bag is zeros."""
    if max_norm is not None or sparse:
        raise NotImplementedError("embedding_bag(max_norm=, sparse=True) are not supported by "
                                  "the daemon")
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    rows = int(weight.shape[0])
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        if padding_idx < -rows:
            raise ValueError("padding_idx must be within the number of embeddings")
        padding_idx += rows
    elif padding_idx >= rows:
        raise ValueError("padding_idx must be within the number of embeddings")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences")
        bags, length = int(input.shape[0]), int(input.shape[1])
        offsets = call("arange", [], {"start": 0.0, "end": float(bags * length),
                                      "step": float(max(length, 1)), "dtype": "int64",
                                      "device": input.device}, session=input._session)
        input = call("reshape", [input], {"shape": [-1]})
        if per_sample_weights is not None:
            per_sample_weights = call("reshape", [per_sample_weights], {"shape": [-1]})
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    ins = [weight, input, offsets]
    if per_sample_weights is not None:
        ins.append(per_sample_weights)
    out = call("_embedding_bag", ins, {
        "scale_grad_by_freq": bool(scale_grad_by_freq), "mode": _MODES[mode],
        "include_last_offset": bool(include_last_offset), "padding_idx": int(padding_idx)})
    return out[0]
