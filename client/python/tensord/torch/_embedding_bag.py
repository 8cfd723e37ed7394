"""``_embedding_bag`` (and ``_embedding_bag_forward_only``) and their dense backward ops as the
daemon's rows of the same names (runtime/ops/embedding_bag_ops.cc): every mode, offsets,
include_last_offset, padding_idx and per_sample_weights, so ``F.embedding_bag`` and
``nn.EmbeddingBag`` train on the daemon. The rows' outputs have the meta function's shapes
(offset2bag [N], bag_size [len(offsets)], max_indices [B, D] in max mode, else [0]). The rules
decline int32 indices or offsets and ``sparse`` gradients: those run on the CPU fallback."""

from __future__ import annotations

from typing import Any

import torch

from ._aten_map import c, rule

aten = torch.ops.aten


def _int64(*ts: Any) -> bool:
    return all(t.dtype.name == "int64" for t in ts)


@rule(aten._embedding_bag.default, aten._embedding_bag_forward_only.default)
def _embedding_bag(weight: Any, indices: Any, offsets: Any, scale_grad_by_freq: bool = False,
                   mode: int = 0, sparse: bool = False, per_sample_weights: Any = None,
                   include_last_offset: bool = False, padding_idx: int = -1) -> Any:
    if not _int64(indices, offsets):
        return NotImplemented
    ins = [weight, indices, offsets] + ([] if per_sample_weights is None
                                        else [per_sample_weights])
    return tuple(c("_embedding_bag", ins, scale_grad_by_freq=bool(scale_grad_by_freq),
                   mode=int(mode), include_last_offset=bool(include_last_offset),
                   padding_idx=int(padding_idx)))


def _dense(grad: Any, indices: Any, offset2bag: Any, bag_size: Any, maximum_indices: Any,
           num_weights: int, scale_grad_by_freq: bool, mode: int, per_sample_weights: Any,
           padding_idx: int) -> Any:
    if not _int64(indices, offset2bag, bag_size, maximum_indices):
        return NotImplemented
    ins = [grad, indices, offset2bag, bag_size, maximum_indices]
    if per_sample_weights is not None:
        ins.append(per_sample_weights)
    return c("_embedding_bag_dense_backward", ins, num_weights=int(num_weights),
             scale_grad_by_freq=bool(scale_grad_by_freq), mode=int(mode),
             padding_idx=int(padding_idx))


@rule(aten._embedding_bag_dense_backward.default)
def _embedding_bag_dense_backward(grad: Any, indices: Any, offset2bag: Any, bag_size: Any,
                                  maximum_indices: Any, num_weights: int,
                                  scale_grad_by_freq: bool, mode: int,
                                  per_sample_weights: Any, padding_idx: int = -1) -> Any:
    return _dense(grad, indices, offset2bag, bag_size, maximum_indices, num_weights,
                  scale_grad_by_freq, mode, per_sample_weights, padding_idx)


@rule(aten._embedding_bag_backward.default)
def _embedding_bag_backward(grad: Any, indices: Any, offsets: Any, offset2bag: Any,
                            bag_size: Any, maximum_indices: Any, num_weights: int,
                            scale_grad_by_freq: bool, mode: int, sparse: bool,
                            per_sample_weights: Any, padding_idx: int = -1) -> Any:
    """The weight's gradient (autograd's formula): the dense one; a sparse one declines."""
    if sparse:
        return NotImplemented
    return _dense(grad, indices, offset2bag, bag_size, maximum_indices, num_weights,
                  scale_grad_by_freq, mode, per_sample_weights, padding_idx)


@rule(aten._embedding_bag_per_sample_weights_backward.default)
def _embedding_bag_per_sample_weights_backward(grad: Any, weight: Any, indices: Any,
                                               offsets: Any, offset2bag: Any, mode: int,
                                               padding_idx: int = -1) -> Any:
    if not _int64(indices, offsets, offset2bag):
        return NotImplemented
    return c("_embedding_bag_per_sample_weights_backward",
             [grad, weight, indices, offsets, offset2bag], mode=int(mode),
             padding_idx=int(padding_idx))
