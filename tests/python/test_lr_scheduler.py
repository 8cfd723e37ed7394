"""tensord.optim.lr_scheduler against torch.optim.lr_scheduler (1.13): each schedule's lr (and
OneCycleLR's momentum/betas) over 30 steps, bit for bit, on two param groups; step(epoch)'s
closed forms; state_dict round trips; a training trajectory under a schedule; the errors."""

import math
import warnings

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("grad_session")

TD, TORCH = td.optim.lr_scheduler, torch.optim.lr_scheduler


def optimizers(kind="SGD"):
    """A tensord and a torch optimizer, alike, over two groups with their own lr."""
    a, b = td.nn.Parameter(td.ones(2)), td.nn.Parameter(td.ones(3))
    ta, tb = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(3))
    kw = dict(momentum=0.9) if kind == "SGD" else {}
    cls, tcls = getattr(td.optim, kind), getattr(torch.optim, kind)
    return (cls([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, **kw),
            tcls([{"params": [ta]}, {"params": [tb], "lr": 0.05}], lr=0.1, **kw))


class Warmup:
    """A callable object: LambdaLR saves its __dict__."""

    def __init__(self, n):
        self.n = n

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.n) * 0.97 ** epoch


SCHEDULES = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.7),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 11, 20], gamma=0.3),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 1 / (1 + 0.3 * e)),
    "LambdaLR-per-group": lambda m, o: m.LambdaLR(o, [Warmup(4), lambda e: 0.9 ** e]),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingLR-long": lambda m, o: m.CosineAnnealingLR(o, T_max=25),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=8),
    "LinearLR-default": lambda m, o: m.LinearLR(o),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[0.3, 0.2], total_steps=31),
    "OneCycleLR-3-linear": lambda m, o: m.OneCycleLR(
        o, max_lr=0.5, epochs=4, steps_per_epoch=8, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, base_momentum=0.8, max_momentum=0.9),
    "OneCycleLR-no-momentum": lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=40,
                                                        cycle_momentum=False, div_factor=10),
}


SCHEDULED = ("lr", "initial_lr", "max_lr", "min_lr", "momentum", "betas", "max_momentum",
             "base_momentum")


def hyper(opt):
    """What the schedulers read and write in each group."""
    return [{k: g[k] for k in SCHEDULED if k in g} for g in opt.param_groups]


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_matches_torch_bit_for_bit(name, kind):
    opt, topt = optimizers(kind)
    sched, tsched = SCHEDULES[name](TD, opt), SCHEDULES[name](TORCH, topt)
    seq, tseq = [sched.get_last_lr()], [tsched.get_last_lr()]
    assert hyper(opt) == hyper(topt)
    for _ in range(30):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        seq.append(sched.get_last_lr())
        tseq.append(tsched.get_last_lr())
        assert hyper(opt) == hyper(topt)  # lr, initial_lr, and OneCycleLR's momentum/betas
    assert seq == tseq
    assert sched.last_epoch == tsched.last_epoch == 30
    assert len(set(map(tuple, seq))) > 3  # the schedule moved


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "CosineAnnealingLR", "LinearLR"])
def test_step_with_epoch_uses_the_closed_form(name):
    opt, topt = optimizers()
    sched, tsched = SCHEDULES[name](TD, opt), SCHEDULES[name](TORCH, topt)
    for epoch in (3, 4, 9, 2, 15, 15, 30):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched.step(epoch)
            tsched.step(epoch)
        assert sched.get_last_lr() == tsched.get_last_lr()


@pytest.mark.parametrize("name", ["StepLR", "LambdaLR-per-group", "CosineAnnealingLR",
                                  "OneCycleLR"])
def test_state_dict_round_trip(name, tmp_path):
    opt, topt = optimizers()
    sched, tsched = SCHEDULES[name](TD, opt), SCHEDULES[name](TORCH, topt)
    for _ in range(10):
        opt.step()
        sched.step()
        topt.step()
        tsched.step()
    state = sched.state_dict()
    # OneCycleLR keeps its strategy's name, not a bound method (PyTorch 2 does the same)
    theirs = {"anneal_strategy" if k == "anneal_func" else k for k in tsched.state_dict()}
    assert set(state) == theirs
    assert "optimizer" not in state
    opt2, _ = optimizers()
    opt2.load_state_dict(opt.state_dict())
    sched2 = SCHEDULES[name](TD, opt2)
    sched2.load_state_dict(state)
    for _ in range(10):
        for o, s in ((opt2, sched2), (topt, tsched)):
            o.step()
            s.step()
        assert sched2.get_last_lr() == tsched.get_last_lr()


def test_training_under_a_schedule_matches_torch():
    torch.manual_seed(0)
    tnet = torch.nn.Linear(4, 2)
    net = td.nn.Linear(4, 2)
    net.load_state_dict({k: v.detach().numpy() for k, v in tnet.state_dict().items()})
    opt = td.optim.SGD(net.parameters(), lr=0.2, momentum=0.5)
    topt = torch.optim.SGD(tnet.parameters(), lr=0.2, momentum=0.5)
    sched = TD.OneCycleLR(opt, max_lr=0.4, total_steps=12)
    tsched = TORCH.OneCycleLR(topt, max_lr=0.4, total_steps=12)
    x = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    for _ in range(12):
        for lib, m, o, s in ((td, net, opt, sched), (torch, tnet, topt, tsched)):
            o.zero_grad()
            (m(lib.tensor(x)) ** 2).mean().backward()
            o.step()
            s.step()
    for (k, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-7,
                                   err_msg=k)


def test_stepping_the_scheduler_first_warns():
    opt, _ = optimizers()
    sched = TD.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert opt._step_count == 1


def test_bad_arguments_raise_torchs_errors():
    opt, topt = optimizers()
    cases = [
        lambda m, o: m.LinearLR(o, start_factor=1.5),
        lambda m, o: m.LinearLR(o, end_factor=-0.1),
        lambda m, o: m.LambdaLR(o, [lambda e: 1.0] * 3),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=0),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1, epochs=2, steps_per_epoch=-1),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=5, pct_start=1.5),
        lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=5, anneal_strategy="exp"),
        lambda m, o: m.OneCycleLR(o, max_lr=[0.1, 0.2, 0.3], total_steps=5),
    ]
    for make in cases:
        with pytest.raises(ValueError) as theirs:
            make(TORCH, topt)
        with pytest.raises(ValueError) as ours:
            make(TD, opt)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        TD.StepLR([], 2)
    with pytest.raises(KeyError, match="initial_lr"):
        TD.StepLR(td.optim.SGD([td.nn.Parameter(td.ones(1))], lr=0.1), 2, last_epoch=3)
    rms = td.optim.Adagrad([td.nn.Parameter(td.ones(1))])
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        TD.OneCycleLR(rms, max_lr=0.1, total_steps=3)
    sched = TD.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    for _ in range(2):
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of "
                                         "total steps is 2"):
        sched.step()
    assert math.isfinite(sched.get_last_lr()[0])
