"""A training loop leaves no handles behind: the daemon's live-handle count returns to its
baseline (parameters and optimizer state aside) once the loop's values are dropped."""

import gc

import numpy as np
import pytest

import tensord as td
from autograd_support import grad_session, optim_session  # noqa: F401 (fixtures)
from conftest import live_handles

pytestmark = pytest.mark.usefixtures("optim_session")


def settle(admin, session) -> int:
    gc.collect()
    td.synchronize()
    td.synchronize()
    return live_handles(admin, session.session_id)


@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_training_loop_releases_its_handles(session, admin, opt_name):
    base = settle(admin, session)
    net = td.nn.Sequential(td.nn.Linear(6, 16), td.nn.BatchNorm1d(16), td.nn.ReLU(),
                           td.nn.Linear(16, 3))
    opt = (td.optim.SGD(net.parameters(), lr=0.1, momentum=0.9) if opt_name == "sgd"
           else td.optim.Adam(net.parameters()))
    loss_fn = td.nn.CrossEntropyLoss()

    def step(i):
        g = np.random.default_rng(i)
        x = td.tensor(g.standard_normal((8, 6)).astype(np.float32))
        y = td.tensor(g.integers(0, 3, 8))
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    step(0)
    after_one = settle(admin, session)
    for i in range(1, 6):
        step(i)
    assert settle(admin, session) == after_one  # steady state: nothing grows per step
    opt.zero_grad()
    del opt, net, loss_fn
    assert settle(admin, session) == base
