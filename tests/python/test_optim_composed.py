"""tensord.optim's RMSprop, Adagrad and Adadelta against torch.optim's (single-tensor
algorithm): parameter trajectories over several steps from the same weights and data, with two
param groups of different options; parameters without a gradient skipped; state_dict round
trips, from tensord and from torch; argument checks."""

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)
from optim_support import assert_same_params, models, run, run_with_b_sometimes_without_grad

pytestmark = pytest.mark.usefixtures("grad_session")


def groups(net, first, second):
    return [dict(params=net[0].parameters(), **first), dict(params=net[2].parameters(),
                                                            **second)]


OPTS = {"RMSprop": (td.optim.RMSprop, torch.optim.RMSprop),
        "Adagrad": (td.optim.Adagrad, torch.optim.Adagrad),
        "Adadelta": (td.optim.Adadelta, torch.optim.Adadelta)}

# (name, defaults, first group's options, second group's options): every option of each
# optimizer set away from its default in at least one group.
CASES = [
    ("RMSprop", dict(lr=0.01), {}, dict(lr=0.003, alpha=0.9)),
    ("RMSprop", dict(lr=0.01, momentum=0.9), dict(centered=True), dict(weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5, eps=1e-4),
     dict(maximize=True), dict(alpha=0.8, weight_decay=0.05)),
    ("Adagrad", dict(lr=0.1), {}, dict(lr_decay=0.1)),
    ("Adagrad", dict(lr=0.05, weight_decay=0.1), dict(initial_accumulator_value=0.5),
     dict(eps=1e-3, maximize=True)),
    ("Adagrad", dict(lr=0.2, lr_decay=0.05, initial_accumulator_value=0.1), dict(lr=0.1),
     dict(weight_decay=0.02)),
    ("Adadelta", dict(), {}, dict(lr=0.5, rho=0.8)),
    ("Adadelta", dict(lr=2.0, weight_decay=0.1), dict(eps=1e-4), dict(maximize=True)),
    ("Adadelta", dict(rho=0.95, maximize=True), dict(weight_decay=0.3), dict(lr=0.3)),
]


@pytest.mark.parametrize("name,kw,first,second", CASES,
                         ids=[f"{c[0]}{c[1]}{c[2]}{c[3]}" for c in CASES])
def test_trajectory_with_two_groups_matches_torch(name, kw, first, second):
    cls, tcls = OPTS[name]
    net, tnet = models(1)
    opt = cls(groups(net, first, second), **kw)
    topt = tcls(groups(tnet, first, second), foreach=False, **kw)
    losses = run(td, net, opt, 6)
    tlosses = run(torch, tnet, topt, 6)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5, atol=1e-6)
    assert_same_params(net, tnet)
    for g, tg in zip(opt.param_groups, topt.param_groups):
        assert {k: v for k, v in g.items() if k not in ("params", "foreach")} == \
            {k: v for k, v in tg.items() if k not in ("params", "foreach")}


@pytest.mark.parametrize("name", list(OPTS))
def test_parameters_without_grad_are_skipped(name):
    cls, tcls = OPTS[name]
    opt, topt, (a, b), (ta, tb) = run_with_b_sometimes_without_grad(
        cls, tcls, dict(lr=0.1), dict(lr=0.1, foreach=False), 3)
    assert [float(opt.state[p]["step"]) for p in (a, b)] == \
        [float(topt.state[p]["step"]) for p in (ta, tb)] == [5.0, 2.0]


CHECKPOINTS = [("RMSprop", dict(lr=0.01, momentum=0.9, centered=True)),
               ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adadelta", dict(lr=0.5))]


@pytest.mark.parametrize("name,kw", CHECKPOINTS, ids=[c[0] for c in CHECKPOINTS])
def test_state_dict_round_trip_and_loading_torch_state(name, kw, tmp_path):
    cls, tcls = OPTS[name]
    net, tnet = models(3)
    opt, topt = cls(net.parameters(), **kw), tcls(tnet.parameters(), foreach=False, **kw)
    run(td, net, opt, 3)
    run(torch, tnet, topt, 3)
    path = str(tmp_path / "ckpt.npz")
    td.save({"model": net.state_dict(), "opt": opt.state_dict()}, path)
    assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])
    want = run(torch, tnet, topt, 3, first=3)
    # a tensord checkpoint, into fresh objects
    net2, _ = models(4)
    opt2 = cls(net2.parameters(), **kw)
    ckpt = td.load(path)
    net2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["opt"])
    np.testing.assert_allclose(run(td, net2, opt2, 3, first=3), want, rtol=1e-5)
    assert_same_params(net2, tnet)
    # torch's own state (torch tensors, torch's step types), continuing torch's trajectory
    net3, tnet3 = models(5)
    topt3 = tcls(tnet3.parameters(), foreach=False, **kw)
    run(torch, tnet3, topt3, 3)
    net3.load_state_dict({k: v.detach().numpy() for k, v in tnet3.state_dict().items()})
    opt3 = cls(net3.parameters(), **kw)
    opt3.load_state_dict(topt3.state_dict())
    np.testing.assert_allclose(run(td, net3, opt3, 3, first=3),
                               run(torch, tnet3, topt3, 3, first=3), rtol=1e-5)
    assert_same_params(net3, tnet3)


@pytest.mark.parametrize("name,kw,message", [
    ("RMSprop", dict(lr=-0.1), "Invalid learning rate: -0.1"),
    ("RMSprop", dict(alpha=-1.0), "Invalid alpha value: -1.0"),
    ("RMSprop", dict(momentum=-0.5), "Invalid momentum value: -0.5"),
    ("RMSprop", dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    ("Adagrad", dict(lr_decay=-1.0), "Invalid lr_decay value: -1.0"),
    ("Adagrad", dict(initial_accumulator_value=-1.0),
     "Invalid initial_accumulator_value value: -1.0"),
    ("Adagrad", dict(weight_decay=-1.0), "Invalid weight_decay value: -1.0"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(lr=-1.0), "Invalid learning rate: -1.0")])
def test_bad_arguments_raise_torchs_errors(name, kw, message):
    cls, tcls = OPTS[name]
    with pytest.raises(ValueError) as theirs:
        tcls([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(ValueError) as ours:
        cls([td.nn.Parameter(td.ones(2))], **kw)
    assert str(ours.value) == str(theirs.value) == message
    with pytest.raises(ValueError, match="empty parameter list"):
        cls([], lr=0.1)


@pytest.mark.parametrize("name", list(OPTS))
def test_step_waits_once_whatever_the_number_of_parameters(name):
    # composed.py: one batched .grad query per step (not one per parameter), then queued ops
    net = td.nn.Sequential(*[td.nn.Linear(4, 4) for _ in range(6)])
    opt = OPTS[name][0](net.parameters(), lr=0.1)
    s = td.default_session()
    for _ in range(2):
        net(td.ones(2, 4)).sum().backward()
        s.synchronize()
        before = s.waits
        opt.step()
        assert s.waits - before == 1
