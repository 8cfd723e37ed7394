"""Reference cases of the losses of loss_ops.cc (binary_cross_entropy, with logits and
pos_weight, smooth_l1_loss, huber_loss), for test_ops_reference.py and
test_autograd_reference.py (through op_cases.py)."""

from __future__ import annotations

from typing import Any, List

import torch
import torch.nn.functional as F

from op_case_inputs import Case, R


def _probabilities(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Values in (0.05, 0.95): binary_cross_entropy's input, away from its log floors."""
    return (torch.sigmoid(R(*shape, seed=seed, dtype=torch.float64)) * 0.9 + 0.05).to(dtype)


def _bce_logits(x: Any, t: Any, *w: Any, reduction: str = "mean",
                has_pos_weight: bool = False) -> torch.Tensor:
    weight = w[0] if w and not (has_pos_weight and len(w) == 1) else None
    return F.binary_cross_entropy_with_logits(x, t, weight, reduction=reduction,
                                              pos_weight=w[-1] if has_pos_weight else None)


def loss_cases() -> List[Case]:
    p = _probabilities
    return [
        Case("binary_cross_entropy", [p(3, 4), p(3, 4, seed=1)], ref=F.binary_cross_entropy),
        Case("binary_cross_entropy", [p(5, dtype=torch.float64), p(5, seed=1, dtype=torch.float64),
                                      R(5, lo=0.1, dtype=torch.float64)],
             {"reduction": "sum"}, ref=F.binary_cross_entropy),
        Case("binary_cross_entropy", [p(2, 3), p(2, 3, seed=2)], {"reduction": "none"},
             ref=F.binary_cross_entropy),
        Case("binary_cross_entropy_with_logits", [R(3, 4), p(3, 4, seed=1)], ref=_bce_logits),
        Case("binary_cross_entropy_with_logits",
             [R(3, 4, dtype=torch.float64), p(3, 4, seed=1, dtype=torch.float64),
              R(4, lo=0.1, dtype=torch.float64, seed=2), R(4, lo=0.5, dtype=torch.float64, seed=3)],
             {"has_pos_weight": True, "reduction": "sum"}, ref=_bce_logits),
        Case("binary_cross_entropy_with_logits", [R(2, 3), p(2, 3, seed=1), R(3, lo=0.5, seed=2)],
             {"has_pos_weight": True, "reduction": "none"}, ref=_bce_logits),
        Case("smooth_l1_loss", [R(3, 4), R(3, 4, seed=1)], ref=F.smooth_l1_loss),
        Case("smooth_l1_loss", [R(3, 4, dtype=torch.float64), R(3, 4, seed=1, dtype=torch.float64)],
             {"beta": 0.5, "reduction": "none"}, ref=F.smooth_l1_loss),
        Case("smooth_l1_loss", [R(5), R(5, seed=1)], {"beta": 0.0, "reduction": "sum"},
             ref=F.smooth_l1_loss),
        Case("huber_loss", [R(3, 4), R(3, 4, seed=1)], ref=F.huber_loss),
        Case("huber_loss", [R(3, 4, dtype=torch.float64), R(3, 4, seed=1, dtype=torch.float64)],
             {"delta": 0.5, "reduction": "none"}, ref=F.huber_loss),
    ]
