"""examples/python/gpt_lm.py, the GPT of the training benchmark (py_bench.py --model gpt), in
tensord against PyTorch from the same weights: every parameter's gradient after one step
(the tied head's included), the losses of a few AdamW steps, the bfloat16 autocast path the
GPU benchmark takes, and the example script and the benchmark's code path themselves.

Debian's PyTorch 1.13 has no scaled_dot_product_attention: there ``gpt_lm.causal_attention``
writes the formula out, so the oracle is the formula and tensord runs its own SDPA."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tensord as td
from autograd_support import grad_session, optim_session  # noqa: F401 (fixtures)

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLES = os.path.join(REPO, "examples", "python")
sys.path.insert(0, EXAMPLES)

import gpt_lm  # noqa: E402

TINY = gpt_lm.TINY


def same_models(config=TINY):
    """(tensord model, torch model) with the torch model's weights."""
    torch.manual_seed(0)
    tmodel = gpt_lm.build_model(torch, config)
    model = gpt_lm.build_model(td, config)
    gpt_lm.copy_weights(tmodel, model)
    return model, tmodel


@pytest.mark.usefixtures("grad_session")
def test_gradients_match_torch():
    model, tmodel = same_models()
    (x, y), = gpt_lm.synthetic_data(1, 4, seed=2)
    loss = gpt_lm.loss_fn(td, model(td.tensor(x)), td.tensor(y))
    loss.backward()
    tloss = gpt_lm.loss_fn(torch, tmodel(torch.from_numpy(x)), torch.from_numpy(y))
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    grads = {n: p.grad for n, p in model.named_parameters()}
    tgrads = {n: p.grad for n, p in tmodel.named_parameters()}
    assert sorted(grads) == sorted(tgrads)
    for name, want in tgrads.items():
        scale = float(want.abs().max())
        np.testing.assert_allclose(grads[name].numpy(), want.numpy(), rtol=1e-3,
                                   atol=1e-4 * scale, err_msg=name)


@pytest.mark.usefixtures("optim_session")
def test_tiny_gpt_losses_match_torch():
    model, tmodel = same_models()
    data = gpt_lm.synthetic_data(4, TINY.batch_size, seed=1)
    losses = gpt_lm.train(td, model, gpt_lm.make_optimizer(td, model, lr=1e-3), data)
    tlosses = gpt_lm.train(torch, tmodel, gpt_lm.make_optimizer(torch, tmodel, lr=1e-3), data)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-4)
    assert losses[-1] < losses[0], losses  # it learns the successor table


@pytest.mark.usefixtures("optim_session")
def test_bf16_autocast_steps_stay_near_float32():
    # The GPU benchmark's path (td.autocast(td.bfloat16) around forward and loss) on the CPU:
    # bfloat16 matmuls move the loss by well under 1%, a wrong cast or gradient by far more.
    model, tmodel = same_models()
    data = gpt_lm.synthetic_data(3, TINY.batch_size, seed=3)
    losses = gpt_lm.train(td, model, gpt_lm.make_optimizer(td, model, lr=1e-3), data,
                          amp="bf16")
    tlosses = gpt_lm.train(torch, tmodel, gpt_lm.make_optimizer(torch, tmodel, lr=1e-3), data)
    np.testing.assert_allclose(losses, tlosses, rtol=1e-2)
    assert model.wte.weight.dtype == td.float32  # float32 master weights


def test_example_script_runs(daemon):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "client", "python"))
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "gpt_lm.py"), "--address",
                          daemon, "--steps", "2", "--batch-size", "2"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "M parameters" in out.stdout and out.stdout.count("loss") >= 2, out.stdout


@pytest.mark.parametrize("lib", ["tensord", "torch"])
def test_bench_gpt_step_with_autocast(daemon, lib):
    # py_bench.py --model gpt --autocast bf16: run_gpu.py's GPT-2 small row, in the tiny config.
    cmd = [sys.executable, os.path.join(REPO, "tools", "bench", "py_bench.py"), "--lib", lib,
           "--bench", "train", "--model", "gpt", "--config", "tiny", "--autocast", "bf16",
           "--steps", "1", "--reps", "1", "--threads", "1"]
    if lib == "tensord":
        cmd += ["--address", daemon]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert '"step_s"' in out.stdout.splitlines()[-1], out.stdout
