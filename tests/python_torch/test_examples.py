"""examples/torch/: each program prints the same losses on the tensord device as on local
PyTorch, from the same initial weights, with no op on the CPU fallback (the device run has
TENSORD_TORCH_NO_FALLBACK=1: a fallback fails the program). The programs differ from their CPU
versions only in the device line and the import.

Note [PyTorch's own spread]: every number the program prints must match local PyTorch's within
rtol 1e-4, or within four times the distance between two local PyTorch runs on different CPU
kernels (its generic ATen kernels and oneDNN held to SSE4.1 against the CPU's best), whichever is
larger. Training amplifies rounding step by step: after four SGD steps of ResNet-18 (batch norm
over 8 values in its last stage) PyTorch on this VM's AVX2 oneDNN kernels differs from PyTorch on
its AVX-512 ones by 2.5e-4, so a fixed 1e-4 is finer than PyTorch's reproducibility across
machines (it passed on one CPU and failed on another). A wrong kernel is off by far more."""

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


# Local PyTorch on other kernels than the CPU's best (Note [PyTorch's own spread]).
_OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "DNNL_MAX_CPU_ISA": "SSE41"}


def _run(daemon: str, example: str, args: list, device: str, env_extra: dict = {}) -> str:
    env = dict(os.environ, TENSORD_ADDRESS=daemon, TENSORD_TORCH_NO_FALLBACK="1",
               PYTHONPATH=os.path.join(REPO, "client", "python"), **env_extra)
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
    other = _run(daemon, example, args, "cpu", _OTHER_KERNELS).splitlines()
    assert len(got) == len(ref) == len(other) and len(ref) >= 3, (got, ref, other)
    for g, r, o in zip(got, ref, other):
        if g.startswith("sample:"):
            continue  # multinomial draws from the daemon's generator, not PyTorch's
        assert _numbers(r), r
        have, want, alt = _numbers(g), _numbers(r), _numbers(o)
        assert len(have) == len(want) == len(alt), (g, r, o)
        for h, w, a in zip(have, want, alt):
            assert abs(h - w) <= max(1e-4 * abs(w), 4 * abs(w - a)), (g, r, o)


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
