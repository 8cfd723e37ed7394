"""tensord.nn's recurrent layers and cells against torch.nn's: parameter names, shapes and
initialisation; outputs, final states and the gradients of the input, the initial states and
every parameter from the same weights (copied with load_state_dict); the argument checks."""

import itertools

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("grad_session")

KINDS = {"LSTM": (td.nn.LSTM, torch.nn.LSTM), "GRU": (td.nn.GRU, torch.nn.GRU),
         "RNN": (td.nn.RNN, torch.nn.RNN)}


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def pair(kind, dtype=torch.float32, seed=0, **kw):
    """A torch module and a tensord one holding its weights."""
    cls, tcls = KINDS[kind]
    torch.manual_seed(seed)
    tmod = tcls(**kw).to(dtype)
    mod = cls(**kw, dtype=td.float64 if dtype == torch.float64 else None)
    mod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})
    return mod, tmod


def leaf(a, dtype):
    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    a = a.astype(np_dtype)
    return td.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def check_grads(mod, tmod, leaves, rtol, atol):
    for (x, tx) in leaves:
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol)
    for (name, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)


def run_both(kind, mod, tmod, xs, hs, dtype, rtol, atol):
    """Forward both with ``xs``/``hs`` (pairs of leaves), a loss weighting every output and
    final state, backward, and every value and gradient compared."""
    hx = None if not hs else (hs[0][0] if kind != "LSTM" else (hs[0][0], hs[1][0]))
    thx = None if not hs else (hs[0][1] if kind != "LSTM" else (hs[0][1], hs[1][1]))
    out, state = mod(xs[0], hx)
    tout, tstate = tmod(xs[1], thx)
    states = state if kind == "LSTM" else (state,)
    tstates = tstate if kind == "LSTM" else (tstate,)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    loss, tloss = 0, 0
    for i, (s, ts) in enumerate(zip((out,) + tuple(states), (tout,) + tuple(tstates))):
        np.testing.assert_allclose(s.numpy(), ts.detach().numpy(), rtol=rtol, atol=atol)
        w = rand(tuple(ts.shape), 100 + i)
        loss = loss + (s * td.tensor(w, dtype=s.dtype)).sum()
        tloss = tloss + (ts * torch.tensor(w, dtype=ts.dtype)).sum()
    loss.backward()
    tloss.backward()
    check_grads(mod, tmod, [xs] + list(hs), rtol, atol)


CASES = [dict(kind=k, num_layers=nl, batch_first=bf, bidirectional=bd, with_h0=h0, bias=b)
         for (k, nl, bf, bd), h0, b in zip(
             itertools.product(KINDS, (1, 2), (False, True), (False, True)),
             itertools.cycle((False, True, True)), itertools.cycle((True, True, True, False)))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(
    f"{k}={v}" if not isinstance(v, str) else v for k, v in c.items()))
def test_sequence_values_states_and_gradients_match_torch(case):
    case = dict(case)
    kind, with_h0 = case.pop("kind"), case.pop("with_h0")
    seed = len(kind) + 3 * case["num_layers"] + 5 * case["batch_first"]
    T, B, I, H = 2 + seed % 4, 1 + seed % 3, 3 + seed % 2, 4 + seed % 3
    mod, tmod = pair(kind, seed=seed, input_size=I, hidden_size=H, **case)
    shape = (B, T, I) if case["batch_first"] else (T, B, I)
    xs = leaf(rand(shape, seed), torch.float32)
    dirs = 2 if case["bidirectional"] else 1
    hs = []
    if with_h0:
        for k in range(2 if kind == "LSTM" else 1):
            hs.append(leaf(rand((case["num_layers"] * dirs, B, H), seed + 10 + k),
                           torch.float32))
    run_both(kind, mod, tmod, xs, hs, torch.float32, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_float64_two_layer_bidirectional_is_tight(kind):
    mod, tmod = pair(kind, torch.float64, seed=3, input_size=5, hidden_size=6, num_layers=2,
                     bidirectional=True)
    xs = leaf(rand((7, 3, 5), 1), torch.float64)
    run_both(kind, mod, tmod, xs, [], torch.float64, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", list(KINDS))
def test_unbatched_input_and_states(kind):
    mod, tmod = pair(kind, seed=4, input_size=3, hidden_size=5, num_layers=2)
    xs = leaf(rand((6, 3), 2), torch.float32)
    hs = [leaf(rand((2, 5), 5 + k), torch.float32) for k in range(2 if kind == "LSTM" else 1)]
    run_both(kind, mod, tmod, xs, hs, torch.float32, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", list(KINDS))
def test_dropout_between_layers(kind):
    # The daemon draws other masks than PyTorch; p=1 zeroes the second layer's input on both
    # (so the values must agree), and eval mode turns dropout off.
    mod, tmod = pair(kind, seed=5, input_size=3, hidden_size=4, num_layers=2, dropout=1.0)
    x = rand((5, 2, 3), 6).astype(np.float32)
    for train in (True, False):
        mod.train(train)
        tmod.train(train)
        out, _ = mod(td.tensor(x))
        with torch.no_grad():
            tout, _ = tmod(torch.tensor(x))
        np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,kw", [("LSTM", dict(num_layers=2, bidirectional=True)),
                                     ("GRU", dict(num_layers=3, bias=False)),
                                     ("RNN", dict(nonlinearity="relu", bidirectional=True))])
def test_parameters_names_shapes_and_init_match_torch(kind, kw):
    cls, tcls = KINDS[kind]
    mod, tmod = cls(7, 5, **kw), tcls(7, 5, **kw)
    assert list(mod.state_dict()) == list(tmod.state_dict())
    for (n, p), (_, tp) in zip(mod.named_parameters(), tmod.named_parameters()):
        assert tuple(p.shape) == tuple(tp.shape), n
        v = p.numpy()
        assert np.abs(v).max() <= 1 / np.sqrt(5) and v.std() > 0.1, n
    assert repr(mod) == repr(tmod)
    assert len(mod.all_weights) == len(tmod.all_weights)


CELLS = {"LSTMCell": (td.nn.LSTMCell, torch.nn.LSTMCell), "GRUCell": (td.nn.GRUCell,
                                                                      torch.nn.GRUCell),
         "RNNCell": (td.nn.RNNCell, torch.nn.RNNCell)}


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_h", [False, True])
@pytest.mark.parametrize("name", list(CELLS))
def test_cells_match_torch(name, with_h, batched):
    cls, tcls = CELLS[name]
    torch.manual_seed(7)
    tcell = tcls(4, 6)
    cell = cls(4, 6)
    assert list(cell.state_dict()) == list(tcell.state_dict())
    cell.load_state_dict({k: v.detach().numpy() for k, v in tcell.state_dict().items()})
    lead = (3,) if batched else ()
    x, tx = leaf(rand(lead + (4,), 8), torch.float32)
    hs = [leaf(rand(lead + (6,), 9 + k), torch.float32)
          for k in range(2 if name == "LSTMCell" else 1)] if with_h else []
    hx = None if not hs else (tuple(h[0] for h in hs) if len(hs) == 2 else hs[0][0])
    thx = None if not hs else (tuple(h[1] for h in hs) if len(hs) == 2 else hs[0][1])
    got, want = cell(x, hx), tcell(tx, thx)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    loss, tloss = 0, 0
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-6)
        r = rand(tuple(w.shape), 20 + i).astype(np.float32)
        loss = loss + (g * td.tensor(r)).sum()
        tloss = tloss + (w * torch.tensor(r)).sum()
    loss.backward()
    tloss.backward()
    check_grads(cell, tcell, [(x, tx)] + hs, rtol=1e-5, atol=1e-6)


def test_bad_arguments_raise_clear_errors():
    lstm = td.nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ValueError, match=r"LSTM: Expected input to be 2-D or 3-D but "
                                         r"received 4-D tensor"):
        lstm(td.zeros(2, 2, 2, 3))
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size. "
                                           r"Expected 3, got 5"):
        lstm(td.zeros(2, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(2, 2, 4\), got "
                                           r"\[2, 3, 4\]"):
        lstm(td.zeros(5, 2, 3), (td.zeros(2, 2, 4), td.zeros(2, 3, 4)))
    with pytest.raises(RuntimeError, match="should also be 3-D but got 2-D"):
        td.nn.GRU(3, 4)(td.zeros(5, 2, 3), td.zeros(2, 4))
    with pytest.raises(TypeError, match="GRU: hx must be a Tensor, got tuple"):
        td.nn.GRU(3, 4)(td.zeros(5, 2, 3), (td.zeros(1, 2, 4), td.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="sequence of length at least 1"):
        td.nn.GRU(3, 4)(td.zeros(0, 2, 3))
    with pytest.raises(NotImplementedError, match="not supported yet: LSTM proj_size"):
        td.nn.LSTM(3, 4, proj_size=2)
    with pytest.raises(NotImplementedError, match="not supported yet: .*PackedSequence"):
        lstm([td.zeros(2, 3)])
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        td.nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        td.nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match="LSTMCell: Expected input to be 1-D or 2-D"):
        td.nn.LSTMCell(3, 4)(td.zeros(1, 2, 3))
    with pytest.raises(RuntimeError, match=r"GRUCell: Expected hidden\[0\] size \(2, 4\), "
                                           r"got \[2, 5\]"):
        td.nn.GRUCell(3, 4)(td.zeros(2, 3), td.zeros(2, 5))
