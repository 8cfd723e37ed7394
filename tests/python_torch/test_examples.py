"""examples/torch/: each program prints the same losses on the tensord device as on local
PyTorch, from the same initial weights (rtol 1e-4 on every number it prints), with no op on the
CPU fallback (the device run has TENSORD_TORCH_NO_FALLBACK=1: a fallback fails the program).
The programs differ from their CPU versions only in the device line and the import."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("torch")

# (program, arguments): issue 26's acceptance programs, each for a few steps.
PROGRAMS = [
    ("mlp.py", ["--steps", "4"]),
    ("tiny_gpt.py", ["--steps", "2"]),  # F.scaled_dot_product_attention
    ("tiny_gpt.py", ["--steps", "2", "--attention", "mask"]),  # tril buffer + masked_fill
    ("mnist_cnn.py", []),  # DataLoader(TensorDataset), Adadelta, StepLR, accuracy count
    ("vae.py", []),  # randn_like, binary_cross_entropy, KL term
    ("dcgan.py", []),  # ConvTranspose2d, BatchNorm2d, LeakyReLU, BCELoss, two Adams, detach
    ("resnet18.py", []),  # SGD momentum, MultiStepLR, top-5 through topk
    ("word_lm.py", ["--model", "LSTM"]),  # 2 layers, hidden state detached between batches
    ("word_lm.py", ["--model", "Transformer"]),  # square subsequent mask
]


# Runs the program as __main__, then reports the device's fallback counts on stderr: a fallback
# that the program (or PyTorch) caught and went around still shows there.
_WRAPPER = """
import atexit, runpy, sys
def report():
    if "tensord.torch" in sys.modules:
        print("FALLBACKS", sys.modules["tensord.torch"].fallback_counts(), file=sys.stderr)
atexit.register(report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _run(daemon: str, example: str, args: list, device: str) -> str:
    env = dict(os.environ, TENSORD_ADDRESS=daemon, TENSORD_TORCH_NO_FALLBACK="1",
               PYTHONPATH=os.path.join(REPO, "client", "python"))
    path = os.path.join(REPO, "examples", "torch", example)
    r = subprocess.run([sys.executable, "-c", _WRAPPER, path, "--device", device, *args],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{example} {args} on {device}:\n{r.stderr[-3000:]}"
    if device != "cpu":
        assert "FALLBACKS {}" in r.stderr.splitlines(), r.stderr[-3000:]
    return r.stdout


@pytest.mark.parametrize("example,args", PROGRAMS,
                         ids=[" ".join([e, *a]) for e, a in PROGRAMS])
def test_example_prints_the_same_on_the_device(daemon: str, example: str, args: list) -> None:
    got = _run(daemon, example, args, "tensord").splitlines()
    ref = _run(daemon, example, args, "cpu").splitlines()
    assert len(got) == len(ref) and len(ref) >= 3, (got, ref)
    for g, r in zip(got, ref):
        if g.startswith("sample:"):
            continue  # multinomial draws from the daemon's generator, not PyTorch's
        assert _numbers(r), r
        assert _numbers(g) == pytest.approx(_numbers(r), rel=1e-4), (g, r)


def test_vae_noise_drawn_on_the_device_stays_there(daemon: str) -> None:
    """randn_like on the device (the daemon's generator): other noise than the CPU's, so other
    losses, but finite ones and no fallback."""
    got = _run(daemon, "vae.py", ["--device-noise", "--epochs", "1"], "tensord").splitlines()
    ref = _run(daemon, "vae.py", ["--epochs", "1"], "cpu").splitlines()
    assert len(got) == len(ref)
    first_got, first_ref = _numbers(got[0])[-1], _numbers(ref[0])[-1]
    assert first_got != first_ref and abs(first_got - first_ref) < 0.05 * first_ref


def _numbers(line: str) -> list:
    return [float(w) for w in line.split() if w.replace(".", "", 1).replace("-", "", 1).isdigit()]
