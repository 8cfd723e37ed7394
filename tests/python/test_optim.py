"""tensord.optim against torch.optim: parameter trajectories over several steps from the same
weights and data; param groups, skipped parameters, zero_grad, state_dict round trips."""

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session, optim_session  # noqa: F401 (fixtures)
from optim_support import assert_same_params, data, models, run, run_with_b_sometimes_without_grad

pytestmark = pytest.mark.usefixtures("optim_session")


SGD_CASES = [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9,
                                                                 nesterov=True),
             dict(lr=0.05, momentum=0.8, dampening=0.3), dict(lr=0.1, weight_decay=0.01),
             dict(lr=0.05, momentum=0.9, weight_decay=0.05, dampening=0.1),
             dict(lr=0.05, momentum=0.5, maximize=True)]


@pytest.mark.parametrize("kw", SGD_CASES, ids=[str(c) for c in SGD_CASES])
def test_sgd_trajectory_matches_torch(kw):
    net, tnet = models()
    losses = run(td, net, td.optim.SGD(net.parameters(), **kw), 6)
    tlosses = run(torch, tnet, torch.optim.SGD(tnet.parameters(), **kw), 6)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5, atol=1e-6)
    assert_same_params(net, tnet)


ADAM_CASES = [(td.optim.Adam, torch.optim.Adam, dict()),
              (td.optim.Adam, torch.optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
              (td.optim.Adam, torch.optim.Adam, dict(lr=0.01, weight_decay=0.1)),
              (td.optim.Adam, torch.optim.Adam, dict(lr=0.01, maximize=True)),
              (td.optim.AdamW, torch.optim.AdamW, dict(lr=0.01)),
              (td.optim.AdamW, torch.optim.AdamW, dict(lr=0.01, weight_decay=0.3))]


@pytest.mark.parametrize("cls,tcls,kw", ADAM_CASES,
                         ids=[f"{c[0].__name__}{c[2]}" for c in ADAM_CASES])
def test_adam_trajectory_matches_torch(cls, tcls, kw):
    net, tnet = models(1)
    losses = run(td, net, cls(net.parameters(), **kw), 6)
    tlosses = run(torch, tnet, tcls(tnet.parameters(), **kw), 6)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5, atol=1e-6)
    assert_same_params(net, tnet, rtol=1e-4, atol=1e-6)


WIDE_CASES = [(td.optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
              (td.optim.AdamW, torch.optim.AdamW, dict(lr=0.01))]


@pytest.mark.parametrize("cls,tcls,kw", WIDE_CASES, ids=[c[0].__name__ for c in WIDE_CASES])
def test_wide_parameters_split_over_threads_match_torch(cls, tcls, kw):
    # 40,000- and 24,000-element weights beside small biases: the fused CPU loops split each
    # parameter's elements into chunks shared out over the pool (Note [Optimizer steps split by
    # elements]); every chunk, the partial last ones included, must be updated once.
    net, tnet = models(3, hidden=8000)
    losses = run(td, net, cls(net.parameters(), **kw), 3)
    tlosses = run(torch, tnet, tcls(tnet.parameters(), **kw), 3)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-4, atol=1e-6)
    # Adam divides by sqrt(v): a gradient near zero, summed in another order by the two GEMMs,
    # moves its element by up to ~lr; 1 in 40,000 did so by 7e-5 (lr/100) in a run.
    assert_same_params(net, tnet, rtol=1e-4, atol=2e-4 if cls is td.optim.AdamW else 1e-6)


def test_adamw_default_weight_decay():
    net, _ = models()
    assert td.optim.AdamW(net.parameters()).param_groups[0]["weight_decay"] == 1e-2
    assert td.optim.Adam(net.parameters()).param_groups[0]["weight_decay"] == 0


def test_param_groups_and_skipped_parameters():
    net, tnet = models(2)
    groups = [{"params": net[0].parameters(), "lr": 0.01},
              {"params": net[2].parameters(), "momentum": 0.9}]
    tgroups = [{"params": tnet[0].parameters(), "lr": 0.01},
               {"params": tnet[2].parameters(), "momentum": 0.9}]
    opt = td.optim.SGD(groups, lr=0.1)
    topt = torch.optim.SGD(tgroups, lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.01, 0.1]
    run(td, net, opt, 3)
    run(torch, tnet, topt, 3)
    assert_same_params(net, tnet)
    # a parameter without grad is skipped (and keeps its value)
    extra = td.nn.Parameter(td.ones(2))
    topt_extra = torch.nn.Parameter(torch.ones(2))
    opt.add_param_group({"params": [extra]})
    topt.add_param_group({"params": [topt_extra]})
    run(td, net, opt, 2)
    run(torch, tnet, topt, 2)
    assert extra.tolist() == [1.0, 1.0]
    assert_same_params(net, tnet)


SKIPPING = [(td.optim.Adam, torch.optim.Adam, dict(lr=0.1)),
            (td.optim.AdamW, torch.optim.AdamW, dict(lr=0.1, weight_decay=0.1)),
            (td.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
            (td.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.5, dampening=0.3))]


@pytest.mark.parametrize("cls,tcls,kw", SKIPPING, ids=[f"{c[0].__name__}{c[2]}" for c in SKIPPING])
def test_parameters_with_different_step_counts(cls, tcls, kw):
    # Note [Optimizer steps read .grad] / [Adam step counts]: the daemon skips b on the steps
    # where it has no gradient (its first included) and counts a's and b's steps apart.
    opt, topt, (a, b), (ta, tb) = run_with_b_sometimes_without_grad(cls, tcls, kw, kw, 2)
    if "step" in topt.state[ta]:
        assert [opt.state[p]["step"].item() for p in (a, b)] == [5.0, 2.0]
        assert [float(topt.state[p]["step"]) for p in (ta, tb)] == [5.0, 2.0]


WAITING = {"SGD": (td.optim.SGD, torch.optim.SGD, dict(lr=0.05)),
           "SGD momentum": (td.optim.SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
           "Adam": (td.optim.Adam, torch.optim.Adam, dict(lr=0.01)),
           "AdamW": (td.optim.AdamW, torch.optim.AdamW, dict(lr=0.01))}


@pytest.mark.parametrize("set_to_none", [True, False], ids=["to_none", "zeroed"])
@pytest.mark.parametrize("name", list(WAITING))
def test_a_training_step_waits_once_for_its_one_read(daemon, name, set_to_none):
    # Issue 27: uploading the batch, zero_grad, backward() and step() are queued; the step's
    # one wait is the loss.item() the program asks for (Session.waits counts blocking waits,
    # each at least a round trip to a remote daemon), from the first step on. The session is
    # remote-like (no shared memory), as tools/bench/wan_bench.py runs it.
    cls, tcls, kw = WAITING[name]
    waits, losses = [], []
    with td.connect(daemon, shm=False) as s:
        assert td.default_session() is s
        net, tnet = models(5)
        opt, topt = cls(net.parameters(), **kw), tcls(tnet.parameters(), **kw)
        s.synchronize()
        for step in range(4):
            before = s.waits
            x, y = data(step)
            opt.zero_grad(set_to_none=set_to_none)
            loss = td.nn.functional.mse_loss(net(td.tensor(x)), td.tensor(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
            waits.append(s.waits - before)
        params = [p.numpy() for p in net.parameters()]
    assert waits == [1, 1, 1, 1], f"blocking waits per step: {waits}"
    tlosses = []
    for step in range(4):
        x, y = data(step)
        topt.zero_grad(set_to_none=set_to_none)
        loss = torch.nn.functional.mse_loss(tnet(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        topt.step()
        tlosses.append(loss.item())
    np.testing.assert_allclose(losses, tlosses, rtol=1e-5, atol=1e-6)
    for p, tp in zip(params, tnet.parameters()):
        np.testing.assert_allclose(p, tp.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_zero_grad_set_to_none_and_zeros():
    net, _ = models()
    opt = td.optim.SGD(net.parameters(), lr=0.1)
    net(td.ones(2, 5)).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert all(not p.grad.numpy().any() for p in net.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())


@pytest.mark.parametrize("make", [lambda p: td.optim.SGD(p, lr=0.05, momentum=0.9),
                                  lambda p: td.optim.Adam(p, lr=0.01)])
def test_state_dict_round_trip_continues_the_trajectory(make, tmp_path):
    net, _ = models(3)
    opt = make(net.parameters())
    run(td, net, opt, 3)
    path = str(tmp_path / "ckpt.npz")
    td.save({"model": net.state_dict(), "opt": opt.state_dict()}, path)
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"} and sd["param_groups"][0]["params"] == [0, 1,
                                                                                           2, 3]
    losses = run(td, net, opt, 3)

    net2, _ = models(4)
    opt2 = make(net2.parameters())
    ckpt = td.load(path)
    net2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["opt"])
    losses2 = run(td, net2, opt2, 3)
    np.testing.assert_allclose(losses2, losses, rtol=1e-6)


def test_step_is_one_command_per_group():
    net, _ = models()
    opt = td.optim.Adam(net.parameters())
    net(td.ones(2, 5)).sum().backward()
    s = td.default_session()
    calls = []
    orig = s.call

    def spy(op_id, *a, **k):
        calls.append(op_id)
        return orig(op_id, *a, **k)
    s.call = spy
    try:
        opt.step()
        opt.step()
    finally:
        del s.call
    adam = s.catalog["adam_step"].id
    assert calls.count(adam) == 2
