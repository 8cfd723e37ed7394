"""Recurrent cells, as ``torch.nn``: ``RNNCell``, ``LSTMCell``, ``GRUCell``, and the one-step
functions that they and the sequence modules (``rnn.py``) share.

A step is composed from daemon ops (``linear``, ``chunk``, ``sigmoid``, ``tanh``, ``mul``,
``add``), in the order ATen's CPU cells use (``aten/src/ATen/native/RNN.cpp``), so values agree
with PyTorch's to rounding and the daemon's autograd differentiates them. The input projection
``x @ W_ih.T + b_ih`` is passed in already computed: a sequence module projects every time step
in one ``linear`` before the loop, leaving one ``linear`` per step for the recurrence.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from .. import _ops, _tensor
from .._multi_ops import chunk
from .._tensor import Tensor
from . import functional as F
from .layers import _uniform_param
from .module import Module

call = _tensor.call


def rnn_step(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Optional[Tensor],
             nonlinearity: str) -> Tensor:
    """Elman RNN: ``act(x_proj + h @ W_hh.T + b_hh)``."""
    pre = F.linear(h, w_hh, b_hh) + x_proj
    return call("tanh" if nonlinearity == "tanh" else "relu", [pre])


def lstm_step(x_proj: Tensor, h: Tensor, c: Tensor, w_hh: Tensor,
              b_hh: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
    """LSTM: gates (i, f, g, o) from ``x_proj + h @ W_hh.T + b_hh``; returns ``(h', c')``."""
    i, f, g, o = chunk(F.linear(h, w_hh, b_hh) + x_proj, 4, 1)
    c = call("sigmoid", [f]) * c + call("sigmoid", [i]) * call("tanh", [g])
    return call("sigmoid", [o]) * call("tanh", [c]), c


def gru_step(x_proj: Tensor, h: Tensor, w_hh: Tensor, b_hh: Optional[Tensor]) -> Tensor:
    """GRU: reset and update gates from both projections, the new gate from the input's plus
    the reset-gated hidden's; ``h' = (h - n) * z + n``."""
    ir, iz, in_ = chunk(x_proj, 3, 1)
    hr, hz, hn = chunk(F.linear(h, w_hh, b_hh), 3, 1)
    r = call("sigmoid", [ir + hr])
    z = call("sigmoid", [iz + hz])
    n = call("tanh", [in_ + hn * r])
    return (h - n) * z + n


GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def init_weights(module: Module, names: List[str], shapes: List[Tuple[int, ...]],
                 hidden_size: int, dtype: Any, device: Any) -> None:
    """Registers the parameters in PyTorch's order, each drawn from ``U(-k, k)`` with
    ``k = 1/sqrt(hidden_size)`` (PyTorch's ``reset_parameters``)."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0.0
    for name, shape in zip(names, shapes):
        setattr(module, name, _uniform_param(shape, bound, dtype, device))


class RNNCellBase(Module):
    """Parameters ``weight_ih (G*H, I)``, ``weight_hh (G*H, H)``, ``bias_ih``, ``bias_hh``."""

    _mode = ""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gate = GATES[self._mode] * hidden_size
        names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if bias else [])
        shapes = [(gate, input_size), (gate, hidden_size), (gate,), (gate,)]
        init_weights(self, names, shapes, hidden_size, dtype, device)
        if not bias:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)

    def _batched(self, input: Tensor, hx: Any) -> Tuple[Tensor, List[Tensor], bool]:
        """The input and hidden states as 2-D (an unbatched call gets a batch of one); zeros
        where ``hx`` is None. Shapes are checked here, with PyTorch's messages."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1-D or 2-D but received "
                             f"{input.dim()}-D tensor")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got "
                               f"{input.shape[-1]} expected {self.input_size}")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        n = 2 if self._mode == "LSTM" else 1
        if hx is None:
            zeros = _ops.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            return x, [zeros] * n, batched
        states = list(hx) if n == 2 else [hx]
        out = []
        for k, h in enumerate(states):
            if h.dim() != input.dim():
                raise RuntimeError(f"{name}: Expected hidden[{k}] to be "
                                   f"{input.dim()}-D for {input.dim()}-D input, got "
                                   f"{h.dim()}-D tensor")
            h = h if batched else h.unsqueeze(0)
            if tuple(h.shape) != (x.shape[0], self.hidden_size):
                raise RuntimeError(f"{name}: Expected hidden[{k}] size "
                                   f"{(x.shape[0], self.hidden_size)}, got {list(h.shape)}")
            out.append(h)
        return x, out, batched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ``relu``)."""

    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, (h,), batched = self._batched(input, hx)
        h = rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                     self.bias_hh, self.nonlinearity)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``."""

    _mode = "LSTM"

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tensor]:
        x, (h, c), batched = self._batched(input, hx)
        h, c = lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                         self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step; returns ``h'``."""

    _mode = "GRU"

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:
        x, (h,), batched = self._batched(input, hx)
        h = gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                     self.bias_hh)
        return h if batched else h.squeeze(0)
