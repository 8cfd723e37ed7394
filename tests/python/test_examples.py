"""The examples (examples/python) train in tensord and in PyTorch from the same initial
weights on the same data for 50 steps, with SGD and with Adam: the losses agree at every
step within float32 tolerance (the issue's training-equivalence test)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session, optim_session  # noqa: F401 (fixtures)

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")
sys.path.insert(0, EXAMPLES)

import cifar_cnn  # noqa: E402
import cifar_resnet  # noqa: E402
import mnist_mlp  # noqa: E402

pytestmark = pytest.mark.usefixtures("optim_session")


def both(example, opt_name: str, lr: float, steps: int, batch: int):
    torch.manual_seed(0)
    tmodel = example.build_model(torch)
    model = example.build_model(td)
    example.copy_weights(tmodel, model)
    data = example.synthetic_data(steps, batch, seed=1)
    losses = example.train(td, model, example.make_optimizer(td, model, opt_name, lr), data)
    tlosses = example.train(torch, tmodel, example.make_optimizer(torch, tmodel, opt_name, lr),
                            data)
    return losses, tlosses


@pytest.mark.parametrize("opt_name,lr", [("sgd", 0.05), ("adam", 1e-3)])
def test_mnist_mlp_matches_torch(opt_name, lr):
    losses, tlosses = both(mnist_mlp, opt_name, lr, steps=50, batch=32)
    np.testing.assert_allclose(losses, tlosses, rtol=2e-4, atol=1e-5)


@pytest.mark.parametrize("opt_name,lr", [("sgd", 0.05), ("adam", 1e-3)])
def test_cifar_cnn_matches_torch(opt_name, lr):
    losses, tlosses = both(cifar_cnn, opt_name, lr, steps=50, batch=16)
    np.testing.assert_allclose(losses, tlosses, rtol=5e-4, atol=1e-4)


def test_cifar_resnet_matches_torch():
    # The ResNet-style model of the GPU training-step benchmark (py_bench.py --model resnet).
    losses, tlosses = both(cifar_resnet, "sgd", 0.05, steps=8, batch=8)
    np.testing.assert_allclose(losses, tlosses, rtol=5e-4, atol=1e-4)


@pytest.mark.parametrize("script", ["mnist_mlp.py", "cifar_cnn.py", "cifar_resnet.py"])
def test_example_scripts_run(daemon, script):
    env = dict(os.environ, PYTHONPATH=os.path.join(EXAMPLES, "..", "..", "client", "python"))
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), "--address", daemon,
                          "--steps", "3", "--batch-size", "8"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("loss") >= 3
