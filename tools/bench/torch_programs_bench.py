#!/usr/bin/env python3
"""Step times of examples/torch's programs on the tensord device against local PyTorch, both
measured in this run, from the same weights.

    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python tools/bench/torch_programs_bench.py

The programs stay untouched: each runs as a subprocess (``python -u``) and the bench stamps the
lines it prints. A training step prints one line, so the step time is the median interval
between consecutive step lines (the first interval, warm-up, left out; the median also drops
the intervals that span an evaluation). Each program runs ``--repeats`` times per device,
alternating devices, and the least median is kept (the VM is shared: the least is the
steadiest). The device run has TENSORD_TORCH_NO_FALLBACK=1: a CPU fallback fails it.

Local PyTorch runs twice: with its default intra-op threads, and with OMP_NUM_THREADS=1. On a
2-vCPU VM that other work shares, PyTorch's two spinning OpenMP threads can make a small step
ten times slower than one thread does; the ratio is taken against the faster of the two.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# (name, program, arguments, step-line marker, steps per printed line)
PROGRAMS = [
    ("MLP (Adam)", "mlp.py", ["--steps", "12"], "step", 1),
    ("tiny GPT, SDPA", "tiny_gpt.py", ["--steps", "31"], "step", 10),
    ("tiny GPT, tril mask", "tiny_gpt.py", ["--steps", "31", "--attention", "mask"], "step", 10),
    ("MNIST CNN (Adadelta)", "mnist_cnn.py", ["--epochs", "1", "--batches", "8"], "batch", 1),
    ("VAE", "vae.py", ["--epochs", "1", "--batches", "8"], "batch", 1),
    ("DCGAN (D+G step)", "dcgan.py", ["--batches", "8"], "batch", 1),
    ("ResNet-18, 8x3x32x32", "resnet18.py", ["--epochs", "1", "--batches", "5"], "batch", 1),
    ("LSTM LM, 2 layers", "word_lm.py", ["--model", "LSTM", "--bptt", "4", "--epochs", "1"],
     "batch", 1),
    ("TransformerEncoder LM", "word_lm.py",
     ["--model", "Transformer", "--bptt", "4", "--epochs", "1"], "batch", 1),
]


def step_ms(program: str, args: list, marker: str, per_line: int, device: str,
            threads: str = "") -> float:
    env = dict(os.environ, TENSORD_TORCH_NO_FALLBACK="1",
               PYTHONPATH=os.path.join(REPO, "client", "python"))
    if threads:
        env["OMP_NUM_THREADS"] = threads
    p = subprocess.Popen([sys.executable, "-u", os.path.join(REPO, "examples", "torch", program),
                          "--device", device, *args], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    stamps = []
    for line in p.stdout:
        if line.split()[:2] and marker in line.split()[:3]:
            stamps.append(time.perf_counter())
    err = p.stderr.read()
    if p.wait() != 0:
        raise SystemExit(f"{program} {args} on {device} failed:\n{err[-2000:]}")
    gaps = [b - a for a, b in zip(stamps[1:], stamps[2:])]  # the first (warm-up) left out
    if not gaps:
        raise SystemExit(f"{program} {args}: too few step lines to time")
    return statistics.median(gaps) / per_line * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", default="", help="programs whose name contains this")
    a = ap.parse_args()
    import torch
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, "
          f"daemon {os.environ.get('TENSORD_ADDRESS', '(default address)')}")
    print(f"{'program':24s} {'local ms':>9s} {'1 thread':>9s} {'tensord ms':>11s} "
          f"{'ratio':>6s}")
    for name, program, args, marker, per_line in PROGRAMS:
        if a.only and a.only not in name:
            continue
        runs = (("cpu", ""), ("cpu", "1"), ("tensord", ""))
        best = {run: float("inf") for run in runs}
        for _ in range(a.repeats):
            for device, threads in runs:
                best[device, threads] = min(best[device, threads], step_ms(
                    program, args, marker, per_line, device, threads))
        local = min(best["cpu", ""], best["cpu", "1"])
        print(f"{name:24s} {best['cpu', '']:9.1f} {best['cpu', '1']:9.1f} "
              f"{best['tensord', '']:11.1f} {best['tensord', ''] / local:6.2f}", flush=True)


if __name__ == "__main__":
    main()
