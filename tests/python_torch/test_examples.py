"""examples/torch/: each program prints the same losses on the tensord device as on local
PyTorch (they differ only in the device line and the import)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("torch")


@pytest.mark.parametrize("example,args", [("mlp.py", ["--steps", "4"]),
                                          ("tiny_gpt.py", ["--steps", "2"])])
def test_example_prints_the_same_on_the_device(daemon: str, example: str, args: list) -> None:
    env = dict(os.environ, TENSORD_ADDRESS=daemon,
               PYTHONPATH=os.path.join(REPO, "client", "python"))
    path = os.path.join(REPO, "examples", "torch", example)

    def run(device: str) -> str:
        r = subprocess.run([sys.executable, path, "--device", device, *args], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout

    got, ref = run("tensord").splitlines(), run("cpu").splitlines()
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        if g.startswith("sample:"):
            continue  # sampling: a tie broken differently would change it, legitimately
        assert _numbers(g) == pytest.approx(_numbers(r), rel=1e-4), (g, r)


def _numbers(line: str) -> list:
    return [float(w) for w in line.split() if w.replace(".", "", 1).replace("-", "", 1).isdigit()]
