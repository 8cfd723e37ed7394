#!/usr/bin/env python3
"""The `tensord` PyTorch device against the native Python client and local PyTorch: the
client's CPU cost per op, the step time of one MLP training step from the same weights, and the
training benchmarks of run_all.sh (py_bench.py's MLP, CNN, ResNet-style and small GPT) in all
three.

    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python tools/bench/torch_device_bench.py \
        [--threads 2] [--models mlp,cnn,resnet,gpt] [--steps 10]

Needs PyTorch >= 2.9 (``.venv-torch``) and a running daemon. Per-op cost is the calling thread's
CPU time (``time.thread_time``) per op in a loop of queued ops; the step time is the wall time
of a step that ends with ``loss.item()`` (one round trip). Both take the least of several
measurements: on a shared VM the least is the steadiest figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tensord as td  # noqa: E402
import tensord.torch as tdt  # noqa: E402


def per_op_us(fn, sync, n: int = 5000, loops: int = 7) -> float:
    """The least of ``loops`` loops' CPU time per op (the VM is shared: the least is the
    steadiest)."""
    for _ in range(300):
        fn()
    sync()
    best = float("inf")
    for _ in range(loops):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t0) / n * 1e6)
        sync()
    return best


def mlp_steps(model, x, y, opt, sync, steps: int = 12) -> float:
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y) if isinstance(x, torch.Tensor) else \
            td.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    sync()
    return min(times[2:]) * 1e3


def train_step_ms(address: str, model: str, lib: str, device: str, threads: int,
                  steps: int) -> float:
    """py_bench.py's training step (median ms) in a fresh process: ``lib`` torch on ``device``
    (cpu: local PyTorch; tensord: the PyTorch device) or tensord (the native client)."""
    cmd = [sys.executable, os.path.join(REPO, "tools", "bench", "py_bench.py"), "--lib", lib,
           "--bench", "train", "--model", model, "--threads", str(threads),
           "--steps", str(steps), "--reps", "3"]
    if lib == "tensord" or device == "tensord":
        cmd += ["--address", address]
    if lib == "torch":
        cmd += ["--device", device]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                    text=True).stdout.strip().splitlines()[-1])
    if out.get("fallbacks"):
        print(f"  ({model} on the device: CPU fallbacks {out['fallbacks']})")
    return out["step_s"] * 1e3


def training_table(address: str, models: list, threads: int, steps: int) -> None:
    """The training benchmarks in the three clients, each model from the same seed (the native
    client draws its own initial weights; a step's time does not depend on them)."""
    print(f"\ntraining step (ms, median; {threads} threads)   tensord device   native client"
          "   local PyTorch   device / PyTorch")
    for model in models:
        dev = train_step_ms(address, model, "torch", "tensord", threads, steps)
        nat = train_step_ms(address, model, "tensord", "cpu", threads, steps)
        loc = train_step_ms(address, model, "torch", "cpu", threads, steps)
        print(f"{model:38s} {dev:14.2f} {nat:15.2f} {loc:15.2f} {dev / loc:18.2f}")


def more_rows(a, b, da, db, na, nb) -> list:
    """Issue 26's other rows: a reflected number, a CPU scalar tensor, ``F.linear`` (with and
    without a weight that wants its gradient), and the optimizers' foreach steps over four
    tensors, Adam's composites among them, and Adam's whole foreach step (the native client:
    its in-place ops in a loop; no row where it has none)."""
    dev = "tensord"
    w, bias = torch.randn(16, 16), torch.randn(16)
    dw, dbias = w.to(dev), bias.to(dev)
    dwg = dw.detach().clone().requires_grad_()
    nw, nbias = td.tensor(w.numpy()), td.tensor(bias.numpy())
    scalar = torch.tensor(2.0)
    ps = [torch.randn(16, 16) for _ in range(4)]
    qs = [torch.randn(16, 16) for _ in range(4)]
    rs = [torch.rand(16, 16) + 1 for _ in range(4)]
    dps, dqs, drs = ([x.to(dev) for x in xs] for xs in (ps, qs, rs))
    nps, nqs = ([td.tensor(x.numpy()) for x in xs] for xs in (ps, qs))
    steps = [-0.01, -0.02, -0.01, -0.03]

    def native_loop(fn):
        return lambda: [fn(x, y) for x, y in zip(nps, nqs)]

    return [
        ("2.0 - x", lambda: 2.0 - da, lambda: 2.0 - na, lambda: 2.0 - a),
        ("x * torch.tensor(2.0)", lambda: da * scalar, None, lambda: a * scalar),
        ("F.linear(x, w, b)", lambda: F.linear(da, dw, dbias),
         lambda: td.nn.functional.linear(na, nw, nbias), lambda: F.linear(a, w, bias)),
        ("F.linear, w grad", lambda: F.linear(da, dwg, dbias), None,
         lambda: F.linear(a, w.requires_grad_(), bias)),
        ("_foreach_mul_ x4", lambda: torch._foreach_mul_(dps, 0.999),
         native_loop(lambda x, y: x.mul_(0.999)), lambda: torch._foreach_mul_(ps, 0.999)),
        ("_foreach_add_ x4 alpha", lambda: torch._foreach_add_(dps, dqs, alpha=-0.001),
         native_loop(lambda x, y: x.add_(y, alpha=-0.001)),
         lambda: torch._foreach_add_(ps, qs, alpha=-0.001)),
        ("_foreach_sqrt x4", lambda: torch._foreach_sqrt(drs), None,
         lambda: torch._foreach_sqrt(rs)),
        ("_foreach_addcdiv_ x4", lambda: torch._foreach_addcdiv_(dps, dqs, drs, steps), None,
         lambda: torch._foreach_addcdiv_(ps, qs, rs, steps)),
        ("_foreach_addcmul_ x4", lambda: torch._foreach_addcmul_(dqs, dps, dps, 0.001),
         None, lambda: torch._foreach_addcmul_(qs, ps, ps, 0.001)),
        ("_foreach_lerp_ x4", lambda: torch._foreach_lerp_(dqs, dps, 0.1), None,
         lambda: torch._foreach_lerp_(qs, ps, 0.1)),
        ("Adam(foreach) step x4", adam_step([x.to(dev) for x in ps], qs),
         None, adam_step([x.clone() for x in ps], qs)),
    ]


def adam_step(params: list, grads: list):
    """Adam's ``foreach`` step over ``params`` (each with a ``grad`` of ``grads``' values on
    its device): the optimizer's whole client cost, its foreach composites included."""
    params = [p.requires_grad_() for p in params]
    for p, g in zip(params, grads):
        p.grad = g.to(p.device)
    opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
    return opt.step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="mlp,cnn,resnet,gpt",
                    help="py_bench.py's training models for the step table ('' for none)")
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    address = os.environ.get("TENSORD_ADDRESS", "127.0.0.1:50051")
    tdt.connect(address)
    native = td.connect(address).session
    dev = "tensord"
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    da, db = a.to(dev), b.to(dev)
    na, nb = td.tensor(a.numpy()), td.tensor(b.numpy())
    rows = [("x + y", lambda: da + db, lambda: na + nb, lambda: a + b),
            ("x.relu()", lambda: da.relu(), lambda: na.relu(), lambda: a.relu()),
            ("x.sum(1)", lambda: da.sum(1), lambda: na.sum(dim=1), lambda: a.sum(1)),
            ("x.t() (a view)", lambda: da.t(), lambda: na.t(), lambda: a.t()),
            ("x * 2.0", lambda: da * 2.0, lambda: na * 2.0, lambda: a * 2.0),
            ("x.add_(y)", lambda: da.add_(db), lambda: na.add_(nb), lambda: a.add_(b)),
            ("torch.cat([x, y])", lambda: torch.cat([da, db]), lambda: td.cat([na, nb]),
             lambda: torch.cat([a, b]))]
    rows += more_rows(a, b, da, db, na, nb)
    print("client CPU per op (us)    tensord device   native client   local PyTorch")
    nothing = lambda: None  # noqa: E731
    for name, f_dev, f_nat, f_loc in rows:
        nat = f"{per_op_us(f_nat, native.synchronize):15.1f}" if f_nat else f"{'-':>15s}"
        print(f"{name:24s} {per_op_us(f_dev, tdt.synchronize):14.1f} "
              f"{nat} {per_op_us(f_loc, nothing):15.1f}")

    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 10))
    x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
    sd = {k: v.clone() for k, v in ref.state_dict().items()}
    local = mlp_steps(ref, x, y, torch.optim.SGD(ref.parameters(), lr=0.01, foreach=True),
                      nothing)
    m = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    m.load_state_dict(sd)
    m.to(dev)
    device = mlp_steps(m, x.to(dev), y.to(dev),
                       torch.optim.SGD(m.parameters(), lr=0.01, foreach=True), tdt.synchronize)
    nm = td.nn.Sequential(td.nn.Linear(784, 256), td.nn.ReLU(), td.nn.Linear(256, 10))
    nm.load_state_dict({k: v.numpy() for k, v in sd.items()})
    nat = mlp_steps(nm, td.tensor(x.numpy()), td.tensor(y.numpy()),
                    td.optim.SGD(nm.parameters(), lr=0.01), native.synchronize)
    print(f"MLP 784-256-10, batch 64, SGD step (ms): tensord device {device:.2f}   native "
          f"client {nat:.2f}   local PyTorch {local:.2f}")
    print(f"tensord device ops that fell back to the CPU: {tdt.fallback_counts() or 'none'}")
    models = [m for m in args.models.split(",") if m]
    if models:
        training_table(address, models, args.threads, args.steps)


if __name__ == "__main__":
    main()
