"""tensord.nn against torch.nn: module API, initialisation, and forward values with weights
copied from the torch module; plus the PyTorch-signature wrappers of multi-output ops."""

import math

import numpy as np
import pytest
import torch

import tensord as td
from helpers import assert_same, from_torch, shapeless, to_torch

pytestmark = pytest.mark.usefixtures("session")
F = td.nn.functional


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def copy_from_torch(tmod: torch.nn.Module, mod: td.nn.Module) -> None:
    mod.load_state_dict({k: v.detach().numpy() for k, v in tmod.state_dict().items()})


def check(mod, tmod, *inputs: np.ndarray, rtol=1e-5, atol=1e-5):
    copy_from_torch(tmod, mod)
    got = mod(*[td.tensor(a) for a in inputs])
    with torch.no_grad():
        want = tmod(*[torch.tensor(a) for a in inputs])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)
    return got, want


# ------------------------------------------------------------------- module API

class Net(td.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = td.nn.Sequential(td.nn.Linear(4, 8), td.nn.ReLU(), td.nn.Linear(8, 2))
        self.norm = td.nn.BatchNorm2d(3)
        self.scale = td.nn.Parameter(td.ones(2))
        self.register_buffer("offset", td.zeros(2))
        self.register_buffer("scratch", td.zeros(1), persistent=False)

    def forward(self, x):
        return self.body(x) * self.scale + self.offset


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(),
                                        torch.nn.Linear(8, 2))
        self.norm = torch.nn.BatchNorm2d(3)
        self.scale = torch.nn.Parameter(torch.ones(2))
        self.register_buffer("offset", torch.zeros(2))
        self.register_buffer("scratch", torch.zeros(1), persistent=False)

    def forward(self, x):
        return self.body(x) * self.scale + self.offset


def test_module_names_match_torch():
    net, tnet = Net(), TorchNet()
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in tnet.named_parameters()]
    assert [n for n, _ in net.named_buffers()] == [n for n, _ in tnet.named_buffers()]
    assert list(net.state_dict()) == list(tnet.state_dict())
    assert [n for n, _ in net.named_modules()] == [n for n, _ in tnet.named_modules()]
    assert [type(m).__name__ for m in net.children()] == ["Sequential", "BatchNorm2d"]
    assert len(list(net.parameters())) == len(list(tnet.parameters()))
    for (n, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        assert tuple(p.shape) == tuple(tp.shape), n
        assert isinstance(p, td.nn.Parameter)
    assert repr(net.body) == repr(tnet.body)


def test_forward_with_copied_weights_and_load_state_dict():
    net, tnet = Net(), TorchNet()
    check(net, tnet, rand(5, 4))
    sd = net.state_dict()
    assert all(isinstance(v, td.Tensor) for v in sd.values())
    other = Net()
    missing, unexpected = other.load_state_dict(sd)
    assert missing == [] and unexpected == []
    x = td.tensor(rand(3, 4))
    np.testing.assert_allclose(other(x).numpy(), net(x).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Missing key"):
        other.load_state_dict({k: v for k, v in sd.items() if k != "scale"})
    with pytest.raises(RuntimeError, match="size mismatch"):
        other.load_state_dict({**sd, "scale": np.ones(3, np.float32)})
    other.load_state_dict({"scale": np.full(2, 2.0, np.float32)}, strict=False)
    assert other.scale.tolist() == [2.0, 2.0]


def test_train_eval_and_attribute_rules():
    net = Net()
    assert net.training and net.body[0].training
    net.eval()
    assert not net.training and not net.body[2].training
    net.train()
    assert net.norm.training
    with pytest.raises(TypeError):
        net.scale = td.ones(2)  # a plain tensor where a parameter is
    net.offset = td.ones(2)
    assert "offset" in dict(net.named_buffers())
    net.extra = td.nn.Linear(2, 2)
    assert "extra.weight" in net.state_dict()
    del net.extra
    assert "extra.weight" not in net.state_dict()


def test_linear_and_conv_init_follow_torch_bounds():
    td.manual_seed(0)
    lin = td.nn.Linear(100, 50)
    w = lin.weight.numpy()
    bound = 1 / math.sqrt(100)
    assert w.shape == (50, 100) and np.abs(w).max() <= bound
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert np.abs(lin.bias.numpy()).max() <= bound
    conv = td.nn.Conv2d(8, 4, 3)
    cb = 1 / math.sqrt(8 * 9)
    cw = conv.weight.numpy()
    assert cw.shape == (4, 8, 3, 3) and np.abs(cw).max() <= cb
    assert cw.std() == pytest.approx(cb / math.sqrt(3), rel=0.15)
    emb = td.nn.Embedding(1000, 8, padding_idx=0)
    e = emb.weight.numpy()
    assert e[1:].std() == pytest.approx(1.0, rel=0.05) and not e[0].any()
    td.nn.init.zeros_(lin.bias)
    assert not lin.bias.numpy().any()
    td.nn.init.xavier_uniform_(lin.weight)
    assert np.abs(lin.weight.numpy()).max() <= math.sqrt(6 / 150)


# ------------------------------------------------------------------ layers

@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    check(td.nn.Linear(6, 4, bias=bias), torch.nn.Linear(6, 4, bias=bias), rand(3, 2, 6))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(padding=2, dilation=2),
                                dict(groups=2, bias=False), dict(padding="same")])
def test_conv2d(kw):
    check(td.nn.Conv2d(4, 6, 3, **kw), torch.nn.Conv2d(4, 6, 3, **kw), rand(2, 4, 9, 9),
          rtol=1e-4, atol=1e-5)


def test_batchnorm2d_training_updates_running_stats_then_eval():
    bn, tbn = td.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    copy_from_torch(tbn, bn)
    for seed in range(3):
        x = rand(4, 3, 5, 5, seed=seed) * 2 + 1
        np.testing.assert_allclose(bn(td.tensor(x)).numpy(),
                                   tbn(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(bn, name).numpy(), getattr(tbn, name).numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    tbn.eval()
    x = rand(2, 3, 4, 4, seed=9)
    np.testing.assert_allclose(bn(td.tensor(x)).numpy(), tbn(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_batchnorm_without_running_stats_or_affine():
    check(td.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
          torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False),
          rand(2, 3, 4, 4), rtol=1e-4)
    check(td.nn.BatchNorm1d(5), torch.nn.BatchNorm1d(5), rand(6, 5), rtol=1e-4)


def test_batchnorm_input_rank_is_checked_with_or_without_the_shape_at_hand():
    bn2, bn1 = td.nn.BatchNorm2d(3), td.nn.BatchNorm1d(3)
    # A shape the client already read: PyTorch's ValueError, at the call.
    x3, x4 = td.tensor(rand(2, 3, 4)), td.tensor(rand(2, 3, 4, 4))
    assert x3.dim() == 3 and x4.dim() == 4
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        bn2(x3)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn1(x4)
    # A result still being computed: the daemon's batch_norm checks the rank, and the value
    # raises when read (the client does not wait for the shape).
    y = bn2(td.tensor(rand(2, 3, 4)) * 2)
    with pytest.raises(td.Error, match=r"expected 4D input \(got 3D input\)"):
        y.numpy()
    ok = bn2(td.tensor(rand(2, 3, 4, 4)) * 2)  # the module goes on
    assert ok.shape == (2, 3, 4, 4)


def test_batchnorm_on_a_daemon_without_ranks_checks_here(monkeypatch):
    """A daemon built before batch_norm took ``ranks``: the module waits for the shape and
    raises PyTorch's ValueError itself, and sends no attribute that daemon would refuse."""
    from tensord import _multi_ops
    monkeypatch.setattr(_multi_ops, "daemon_checks_ranks", lambda _input: False)
    bn2 = td.nn.BatchNorm2d(3)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        bn2(td.tensor(rand(2, 3, 4)) * 2)
    x = rand(2, 3, 4, 4)
    tbn = torch.nn.BatchNorm2d(3)
    copy_from_torch(tbn, bn2)
    np.testing.assert_allclose(bn2(td.tensor(x) * 2).numpy(),
                               tbn(torch.tensor(x) * 2).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(6,), (3, 6)])
def test_layer_norm(shape):
    check(td.nn.LayerNorm(shape), torch.nn.LayerNorm(shape), rand(2, 3, 6) * 3 + 1, rtol=1e-4)
    check(td.nn.LayerNorm(6, elementwise_affine=False),
          torch.nn.LayerNorm(6, elementwise_affine=False), rand(4, 6), rtol=1e-4)


def test_embedding():
    emb, temb = td.nn.Embedding(10, 4), torch.nn.Embedding(10, 4)
    copy_from_torch(temb, emb)
    idx = np.array([[1, 2, 9], [0, 0, 3]])
    np.testing.assert_allclose(emb(td.tensor(idx)).numpy(),
                               temb(torch.tensor(idx)).detach().numpy())
    np.testing.assert_allclose(F.embedding(td.tensor(idx), emb.weight).numpy(),
                               temb(torch.tensor(idx)).detach().numpy())


@pytest.mark.parametrize("name,args", [
    ("ReLU", ()), ("GELU", ()), ("GELU", ("tanh",)), ("Sigmoid", ()), ("Tanh", ()),
    ("SiLU", ()), ("LeakyReLU", (0.2,)), ("Softmax", (1,)), ("LogSoftmax", (-1,)),
    ("Flatten", ()), ("Identity", ()), ("Dropout", (0.0,)), ("MaxPool2d", (2,)),
    ("MaxPool2d", (3, 2, 1)), ("AvgPool2d", (2,)), ("AdaptiveAvgPool2d", (1,)),
    ("AdaptiveAvgPool2d", ((2, 3),))])
def test_parameterless_layers(name, args):
    check(getattr(td.nn, name)(*args), getattr(torch.nn, name)(*args), rand(2, 3, 6, 6),
          rtol=1e-4, atol=1e-5)


def test_dropout_train_and_eval():
    d = td.nn.Dropout(0.5)
    x = td.ones(1000)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 300 < (y == 0).sum() < 700
    d.eval()
    assert d(x).numpy().tolist() == [1.0] * 1000


@pytest.mark.parametrize("kw", [dict(), dict(reduction="sum"), dict(reduction="none"),
                                dict(label_smoothing=0.1), dict(ignore_index=1)])
def test_cross_entropy_loss(kw):
    logits = rand(6, 4)
    target = np.array([0, 1, 3, 2, 1, 0])
    got = td.nn.CrossEntropyLoss(**kw)(td.tensor(logits), td.tensor(target))
    want = torch.nn.CrossEntropyLoss(**kw)(torch.tensor(logits), torch.tensor(target))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_weighted_losses_and_mse():
    logits, w = rand(5, 3), np.abs(rand(3, seed=2))
    t = np.array([0, 2, 1, 1, 0])
    got = F.cross_entropy(td.tensor(logits), td.tensor(t), weight=td.tensor(w))
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(t),
                                             weight=torch.tensor(w))
    assert got.item() == pytest.approx(want.item(), rel=1e-5)
    a, b = rand(3, 4), rand(3, 4, seed=1)
    for red in ("mean", "sum", "none"):
        np.testing.assert_allclose(
            td.nn.MSELoss(reduction=red)(td.tensor(a), td.tensor(b)).numpy(),
            torch.nn.MSELoss(reduction=red)(torch.tensor(a), torch.tensor(b)).numpy(),
            rtol=1e-5)
        np.testing.assert_allclose(
            td.nn.L1Loss(reduction=red)(td.tensor(a), td.tensor(b)).numpy(),
            torch.nn.L1Loss(reduction=red)(torch.tensor(a), torch.tensor(b)).numpy(),
            rtol=1e-5)
    lp = torch.log_softmax(torch.tensor(logits), 1)
    np.testing.assert_allclose(F.nll_loss(from_torch(lp), td.tensor(t)).numpy(),
                               torch.nn.functional.nll_loss(lp, torch.tensor(t)).numpy(),
                               rtol=1e-5)
    bt = (rand(3, 4, seed=3) > 0).astype(np.float32)
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(td.tensor(a), td.tensor(bt)).numpy(),
        torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(a),
                                                             torch.tensor(bt)).numpy(),
        rtol=1e-5)


def test_functional_misc():
    x = rand(3, 5)
    tx = torch.tensor(x)
    np.testing.assert_allclose(F.normalize(td.tensor(x)).numpy(),
                               torch.nn.functional.normalize(tx).numpy(), rtol=1e-5)
    np.testing.assert_array_equal(F.one_hot(td.tensor([2, 0, 1]), 4).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor([2, 0, 1]), 4))
    np.testing.assert_allclose(F.softmax(td.tensor(x), dim=1).numpy(),
                               torch.softmax(tx, 1).numpy(), rtol=1e-5)
    np.testing.assert_allclose(F.layer_norm(td.tensor(x), (5,)).numpy(),
                               torch.nn.functional.layer_norm(tx, (5,)).numpy(),
                               rtol=1e-4, atol=1e-5)


# ------------------------------------------------- multi-output and positional ops

def test_max_min_forms():
    x = rand(3, 4)
    t = torch.tensor(x)
    for name in ("max", "min"):
        r, tr = getattr(td, name)(td.tensor(x), 1), getattr(torch, name)(t, 1)
        assert type(r).__name__ == name and r._fields == ("values", "indices")
        assert_same(r.values, tr.values)
        assert_same(r.indices, tr.indices)
        r = getattr(td.tensor(x), name)(dim=0, keepdim=True)
        tr = getattr(t, name)(dim=0, keepdim=True)
        assert_same(r[0], tr[0])
        assert_same(r[1], tr[1])
        assert_same(getattr(td.tensor(x), name)(), getattr(t, name)())
        y = rand(3, 4, seed=1)
        assert_same(getattr(td, name)(td.tensor(x), td.tensor(y)),
                    getattr(torch, name)(t, torch.tensor(y)))


@pytest.mark.parametrize("arg,dim", [(2, 0), (3, 1), ([1, 4], 1), ([5], 1), (10, 0)])
def test_split(arg, dim):
    t = torch.arange(25.0).reshape(5, 5)
    got, want = td.split(from_torch(t), arg, dim), torch.split(t, arg, dim)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert len(from_torch(t).split(arg, dim)) == len(want)


def test_split_into_sections_waits_for_no_shape():
    # Two or more sections give as many pieces whatever the shape: a tensor whose shape the
    # client has not yet splits without waiting, and the daemon checks the sizes (raised at the
    # next read). Note [Attention without shape waits].
    t = torch.arange(30.0).reshape(5, 6)
    x = shapeless(from_torch(t))
    waits = td.default_session().waits
    got = x.split([1, 2, 3], -1)
    assert td.default_session().waits == waits
    for g, w in zip(got, t.split([1, 2, 3], -1)):
        assert_same(g, w)
    bad = shapeless(from_torch(t)).split([1, 2], 1)
    with pytest.raises(RuntimeError, match=r"split_sizes to sum exactly to 6 .*dimension 1"):
        bad[0].numpy()


@pytest.mark.parametrize("n,size", [(2, 5), (3, 5), (5, 5), (6, 5), (4, 6), (3, 0)])
def test_chunk_and_unbind(n, size):
    t = torch.arange(float(size * 2)).reshape(size, 2)
    got, want = from_torch(t).chunk(n), t.chunk(n)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert len(td.unbind(from_torch(t))) == len(t.unbind())
    for g, w in zip(from_torch(t).unbind(1), t.unbind(1)):
        assert_same(g, w)


def test_gather_scatter_index_select():
    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor([[0, 2], [1, 3], [3, 0]])
    assert_same(td.gather(from_torch(x), 1, from_torch(idx)), torch.gather(x, 1, idx))
    assert_same(from_torch(x).gather(1, from_torch(idx)), x.gather(1, idx))
    src = torch.ones(3, 2) * 7
    assert_same(td.scatter(from_torch(x), 1, from_torch(idx), from_torch(src)),
                torch.scatter(x, 1, idx, src))
    assert_same(from_torch(x).scatter(1, from_torch(idx), 5.0), x.scatter(1, idx, 5.0))
    assert_same(from_torch(x).scatter_add(1, from_torch(idx), from_torch(src)),
                x.scatter_add(1, idx, src))
    sel = torch.tensor([2, 0])
    assert_same(td.index_select(from_torch(x), 0, from_torch(sel)),
                torch.index_select(x, 0, sel))
    assert_same(from_torch(x).index_select(1, from_torch(sel)), x.index_select(1, sel))
    dup = torch.tensor([[0, 2], [0, 0], [3, 3]])  # repeated targets in rows 1 and 2
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        assert_same(td.scatter_reduce(from_torch(x), 1, from_torch(dup), from_torch(src), reduce,
                                      include_self=False),
                    torch.scatter_reduce(x, 1, dup, src, reduce, include_self=False))
        assert_same(from_torch(x).scatter_reduce(1, from_torch(dup), from_torch(src), reduce),
                    x.scatter_reduce(1, dup, src, reduce))
    rows = torch.tensor([2, 0, 2])
    assert_same(from_torch(x).index_reduce(0, from_torch(rows), from_torch(x), "mean",
                                           include_self=False),
                x.index_reduce(0, rows, x, "mean", include_self=False))


def test_layer_norm_positional_signature():
    x, w, b = torch.randn(2, 3, 4), torch.randn(4), torch.randn(4)
    assert_same(td.layer_norm(from_torch(x), [4], from_torch(w), from_torch(b), 1e-5),
                torch.layer_norm(x, [4], w, b, 1e-5), rtol=1e-4, atol=1e-5)
    assert_same(F.layer_norm(from_torch(x), (4,), None, from_torch(b)),
                torch.nn.functional.layer_norm(x, (4,), None, b), rtol=1e-4, atol=1e-5)


def test_module_to_dtype():
    lin = td.nn.Linear(3, 2).double()
    assert lin.weight.dtype is td.float64 and isinstance(lin.weight, td.nn.Parameter)
    assert lin(td.ones(1, 3, dtype=td.float64)).dtype is td.float64
    assert to_torch(lin.weight).dtype == torch.float64
