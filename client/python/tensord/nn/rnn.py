"""Recurrent layers over sequences, as ``torch.nn``: ``RNN``, ``LSTM``, ``GRU``.

PyTorch's parameters, by PyTorch's names and in its order (``weight_ih_l{k}``,
``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``, ``_reverse`` for the second direction),
shapes and initialisation (``U(-1/sqrt(hidden), 1/sqrt(hidden))``), so a PyTorch module's
``state_dict`` loads as it is. The computation is composed from daemon ops, queued without
waiting: per layer and direction, one ``linear`` projects the whole sequence, then each time step
is a handful of ops (``rnn_cells``); the daemon's autograd runs the backward. Dropout between
layers uses the daemon's generator (PyTorch's masks differ). ``proj_size`` and
``PackedSequence`` are not supported yet.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, List, Optional, Tuple

from .. import _ops, _tensor
from .._multi_ops import unbind
from .._tensor import Tensor
from . import functional as F
from .module import Module
from .rnn_cells import GATES, gru_step, init_weights, lstm_step, rnn_step

call = _tensor.call


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters, argument checks, the layer and direction
    loops. ``_mode`` is PyTorch's (``"LSTM"``, ``"GRU"``, ``"RNN_TANH"``, ``"RNN_RELU"``)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        if proj_size:
            raise NotImplementedError("not supported yet: LSTM proj_size (use a Linear on the "
                                      "output instead)")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, 0
        gate = GATES[mode] * hidden_size
        dirs = 2 if bidirectional else 1
        names, shapes = [], []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                names += [f"weight_ih{sfx}", f"weight_hh{sfx}"]
                shapes += [(gate, in_size), (gate, hidden_size)]
                if bias:
                    names += [f"bias_ih{sfx}", f"bias_hh{sfx}"]
                    shapes += [(gate,), (gate,)]
        self._flat_weights_names = names
        init_weights(self, names, shapes, hidden_size, dtype, device)

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts cuDNN's weights here; the daemon keeps none apart)."""

    @property
    def all_weights(self) -> List[List[Tensor]]:
        """The parameters of each layer and direction, as PyTorch lists them."""
        per = 4 if self.bias else 2
        flat = [getattr(self, n) for n in self._flat_weights_names]
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def _weights(self, layer: int, direction: int) -> Tuple[Tensor, Tensor, Any, Any]:
        sfx = f"_l{layer}" + ("_reverse" if direction else "")
        get = self._parameters.get
        return (get(f"weight_ih{sfx}"), get(f"weight_hh{sfx}"), get(f"bias_ih{sfx}"),
                get(f"bias_hh{sfx}"))

    # ------------------------------------------------------------------ checks

    def _sequence(self, input: Any) -> Tuple[Tensor, bool]:
        """The input as ``(T, B, I)``; whether it came batched."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise NotImplementedError(f"not supported yet: {name} input of type "
                                      f"{type(input).__name__} (PackedSequence and the like); "
                                      "use a padded (T, B, I) tensor")
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2-D or 3-D but received "
                             f"{input.dim()}-D tensor")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        batched = input.dim() == 3
        if not batched:
            x = input.unsqueeze(1)
        else:
            x = input.transpose(0, 1) if self.batch_first else input
        if x.shape[0] == 0:
            raise RuntimeError(f"{name}: expected a sequence of length at least 1, got input "
                               f"of shape {list(input.shape)}")
        return x, batched

    def _initial(self, hx: Optional[Tensor], x: Tensor, batched: bool, what: str) -> Tensor:
        """An initial state as ``(L*D, B, H)``: zeros when None, else checked."""
        name = type(self).__name__
        want = (self.num_layers * (2 if self.bidirectional else 1), x.shape[1],
                self.hidden_size)
        if hx is None:
            return _ops.zeros(*want, dtype=x.dtype, device=x.device)
        if not isinstance(hx, Tensor):
            raise TypeError(f"{name}: {what} must be a Tensor, got {type(hx).__name__}")
        rank = 3 if batched else 2
        if hx.dim() != rank:
            raise RuntimeError(f"{name}: for {'batched 3' if batched else 'unbatched 2'}-D "
                               f"input, {what} should also be {rank}-D but got "
                               f"{hx.dim()}-D tensor")
        h = hx if batched else hx.unsqueeze(1)
        if tuple(h.shape) != want:
            raise RuntimeError(f"{name}: Expected {what} size {want}, got {list(hx.shape)}")
        return h

    # ------------------------------------------------------------------ compute

    def _run(self, x: Tensor, states: List[Tensor]) -> Tuple[Tensor, List[Tensor]]:
        """All layers over ``x`` (T, B, I) from ``states`` (each ``(L*D, B, H)``); returns the
        last layer's output ``(T, B, D*H)`` and the final states, each ``(L*D, B, H)``."""
        dirs = 2 if self.bidirectional else 1
        per_state = [unbind(s, 0) for s in states]
        finals: List[List[Tensor]] = [[] for _ in states]
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                out, last = self._direction(x, [s[k] for s in per_state], layer, d)
                outs.append(out)
                for f, t in zip(finals, last):
                    f.append(t)
            x = outs[0] if dirs == 1 else call("cat", outs, {"dim": 2})
        return x, [call("stack", f, {"dim": 0}) for f in finals]

    def _direction(self, x: Tensor, state: List[Tensor], layer: int,
                   direction: int) -> Tuple[Tensor, List[Tensor]]:
        """One layer in one direction: the outputs ``(T, B, H)`` and the final states."""
        w_ih, w_hh, b_ih, b_hh = self._weights(layer, direction)
        steps = unbind(F.linear(x, w_ih, b_ih), 0)
        if direction:
            steps = steps[::-1]
        outs = []
        for xp in steps:
            state = self._step(xp, state, w_hh, b_hh)
            outs.append(state[0])
        if direction:
            outs.reverse()
        return call("stack", outs, {"dim": 0}), state

    def _step(self, xp: Tensor, state: List[Tensor], w_hh: Tensor, b_hh: Any) -> List[Tensor]:
        raise NotImplementedError

    def _finish(self, out: Tensor, batched: bool) -> Tensor:
        if not batched:
            return out.squeeze(1)
        return out.transpose(0, 1) if self.batch_first else out

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN (``nonlinearity`` ``"tanh"`` or ``"relu"``); returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def _step(self, xp: Tensor, state: List[Tensor], w_hh: Tensor, b_hh: Any) -> List[Tensor]:
        return [rnn_step(xp, state[0], w_hh, b_hh, self.nonlinearity)]

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        x, batched = self._sequence(input)
        out, (h,) = self._run(x, [self._initial(hx, x, batched, "hx")])
        return self._finish(out, batched), (h if batched else h.squeeze(1))


class GRU(RNNBase):
    """Multi-layer GRU; returns ``(output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def _step(self, xp: Tensor, state: List[Tensor], w_hh: Tensor, b_hh: Any) -> List[Tensor]:
        return [gru_step(xp, state[0], w_hh, b_hh)]

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
        x, batched = self._sequence(input)
        out, (h,) = self._run(x, [self._initial(hx, x, batched, "hx")])
        return self._finish(out, batched), (h if batched else h.squeeze(1))


class LSTM(RNNBase):
    """Multi-layer LSTM; returns ``(output, (h_n, c_n))``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def _step(self, xp: Tensor, state: List[Tensor], w_hh: Tensor, b_hh: Any) -> List[Tensor]:
        return list(lstm_step(xp, state[0], state[1], w_hh, b_hh))

    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        x, batched = self._sequence(input)
        if hx is None:
            states = [self._initial(None, x, batched, "hx")] * 2
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of tensors")
            states = [self._initial(hx[0], x, batched, "hidden[0]"),
                      self._initial(hx[1], x, batched, "hidden[1]")]
        out, (h, c) = self._run(x, states)
        if not batched:
            h, c = h.squeeze(1), c.squeeze(1)
        return self._finish(out, batched), (h, c)


__all__: List[str] = ["RNNBase", "RNN", "LSTM", "GRU"]
