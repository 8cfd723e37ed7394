#!/usr/bin/python3
"""The Python side of ``tools/bench/run_all.sh``: each benchmark written once over ``lib``
(``tensord`` or ``torch``), so both run the same code (the transfer benchmark in
py_bench_transfer.py).

Usage (run_all.py and run_gpu.py drive it; each prints one JSON object):
    py_bench.py --lib tensord --address HOST:PORT --bench tiny|sync|transfer|train|worker|matmul
                [--shm auto|off]   (off: every byte on the stream, as from another host)
    py_bench.py --lib torch --bench tiny|sync|transfer|train|matmul
    --device cpu|cuda  where the tensors live (tiny, sync, train, matmul); default cpu. On cuda,
                       PyTorch runs on torch.device("cuda") with torch.cuda.synchronize() around
                       its timings and TF32 off (as in tensord); tensord's session puts its
                       tensors on cuda:0. Exits 2, saying why, when the device is missing.
    --lib torch --device tensord --address HOST:PORT: PyTorch itself on the daemon, through the
                       tensord PyTorch device (tensord.torch; needs PyPI's PyTorch, .venv-torch).
    --model mlp|cnn|resnet|gpt (train; gpt: --config tiny|gpt2-small, AdamW),
    --autocast bf16|fp16 (train: the forward in mixed precision), --dtype float32|bfloat16
    and --n N (matmul).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))
sys.path.insert(0, os.path.join(REPO, "examples", "python"))

from py_bench_transfer import transfer  # noqa: E402 (the transfer benchmark)


def median(values: List[float]) -> float:
    return statistics.median(values)


DEVICE = "cpu"  # --device, as the library spells it ("cpu", "cuda:0")
OPTIM = "sgd"  # --optim: the training benchmarks' optimizer (not GPT's: AdamW)
GPT_CONFIG = "tiny"  # --config: examples/python/gpt_lm.py's CONFIGS key
AUTOCAST = None  # --autocast: "bf16"/"fp16" mixed precision for the training forward


def sync(lib: Any) -> None:
    """Waits for the device: tensord's session, or PyTorch's CUDA stream."""
    if lib.__name__ == "tensord":
        lib.synchronize()
    elif DEVICE != "cpu":
        getattr(lib, DEVICE.split(":")[0]).synchronize()  # torch.cuda or torch.tensord


def no_device(why: str) -> None:
    """Exits 2 (run_gpu.py's "device missing"), saying why."""
    print(f"py_bench: {why}", file=sys.stderr, flush=True)
    sys.exit(2)


def use_device(lib: Any, device: str) -> None:
    """Sets DEVICE, or exits 2 saying why ``device`` cannot be used."""
    global DEVICE
    DEVICE = "cuda:0" if device == "cuda" else device
    if lib.__name__ == "tensord":
        have = lib.default_session().devices
        if DEVICE not in have:
            no_device(f"the tensord daemon at {lib.default_session().address} has no {DEVICE} "
                      f"device (its devices: {', '.join(have)}): run it on a GPU box, from a "
                      "CUDA build (docs/gpu.md)")
        # Parameters and creation ops land there too (a GPU daemon's default is cuda:0).
        lib.set_default_device(DEVICE)
    elif DEVICE.startswith("cuda"):
        if not lib.cuda.is_available():
            no_device(f"PyTorch {lib.__version__} sees no CUDA device "
                      "(torch.cuda.is_available() is False)")
        lib.backends.cuda.matmul.allow_tf32 = False  # tensord's GEMMs and convolutions: no TF32
        lib.backends.cudnn.allow_tf32 = False


# ------------------------------------------------------------------ benchmarks

def tiny(lib: Any, ops: int, reps: int) -> Dict[str, float]:
    """``ops`` dependent adds on 1-element tensors, then one sync: median ops/s."""
    one = lib.tensor([1.0], device=DEVICE)

    def run(n: int) -> float:
        x = lib.tensor([0.0], device=DEVICE)
        sync(lib)
        t0 = time.perf_counter()
        for _ in range(n):
            x = x + one
        sync(lib)
        dt = time.perf_counter() - t0
        if x.item() != float(n):
            raise SystemExit(f"tiny: wrong sum {x.item()} (want {n})")
        return n / dt

    run(ops // 10)
    return {"ops_per_s": median([run(ops) for _ in range(reps)])}


def sync_latency(lib: Any, iters: int) -> Dict[str, float]:
    """``item()`` of a freshly computed scalar: p50/p99 in microseconds."""
    base = lib.tensor([1.0], device=DEVICE)
    lat = []
    for i in range(iters + iters // 10):
        t0 = time.perf_counter()
        (base + 1.0).item()
        if i >= iters // 10:  # the first tenth is warm-up
            lat.append((time.perf_counter() - t0) * 1e6)
    lat.sort()
    return {"p50_us": lat[len(lat) // 2], "p99_us": lat[int(0.99 * (len(lat) - 1))]}


def matmul(lib: Any, n: int, dtype: str, reps: int) -> Dict[str, float]:
    """``n`` x ``n`` @ ``n`` x ``n`` in ``dtype``: median seconds per product and TFLOP/s."""
    dt = getattr(lib, dtype)
    lib.manual_seed(0)
    a = lib.randn(n, n, device=DEVICE).to(dt)
    b = lib.randn(n, n, device=DEVICE).to(dt)
    # About 20 TFLOP per timing (at least 1 product, at most 20): a sync's round trip (a remote
    # client's, ~0.4 ms) must not count as part of one product (8192^2 bf16: ~1.4 ms on an H200).
    iters = max(1, min(20, int(2e13 / (2 * n ** 3))))
    c = lib.matmul(a, b)
    sync(lib)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(iters):
            c = lib.matmul(a, b)
        sync(lib)
        times.append((time.perf_counter() - t0) / iters)
    del c
    t = median(times)
    return {"s": t, "tflops": 2.0 * n ** 3 / t / 1e12}


def _model(lib: Any, kind: str) -> tuple:
    """(model, optimizer, batches, loss(logits, targets)) of a training benchmark."""
    if kind == "gpt":
        return _gpt(lib)
    if kind == "mlp":
        import mnist_mlp as ex
        batch = 256
    elif kind == "cnn":
        import cifar_cnn as ex
        batch = 64
    else:
        import cifar_resnet as ex
        batch = 64
    lib.manual_seed(0)
    model = ex.build_model(lib)
    if lib.__name__ != "tensord":
        model.to(DEVICE)  # tensord built it on the session's default device (use_device)
    if OPTIM == "adam":
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    else:
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = ex.synthetic_data(4, batch)
    return model, opt, data, lib.nn.CrossEntropyLoss()


def _gpt(lib: Any) -> tuple:
    """examples/python/gpt_lm.py in GPT_CONFIG, trained with AdamW as GPT-2 is (PyTorch's
    fused CUDA AdamW on cuda, as nanoGPT; tensord's adam_step is one fused command)."""
    import gpt_lm as ex
    config = ex.CONFIGS[GPT_CONFIG]
    lib.manual_seed(0)
    model = ex.build_model(lib, config)
    if lib.__name__ != "tensord":
        model.to(DEVICE)
    fused = lib.__name__ != "tensord" and DEVICE.startswith("cuda")
    opt = ex.make_optimizer(lib, model, fused=fused)
    data = ex.synthetic_data(4, config.batch_size, config=config)
    return model, opt, data, lambda logits, targets: ex.loss_fn(lib, logits, targets)


def _step_fn(lib: Any, kind: str) -> Tuple[Callable[[int], float], int]:
    from gpt_lm import autocast  # td.autocast or torch.autocast (--autocast), or none
    model, opt, data, loss_fn = _model(lib, kind)
    model.train()

    def step(i: int) -> float:
        x, y = data[i % len(data)]
        xs, ys = lib.tensor(x, device=DEVICE), lib.tensor(y, device=DEVICE)
        opt.zero_grad()
        with autocast(lib, DEVICE, AUTOCAST):
            loss = loss_fn(model(xs), ys)
        loss.backward()
        opt.step()
        return loss.item()  # the one sync point per step, in both libraries

    x, y = data[0]
    return step, x.nbytes + y.nbytes


def train(lib: Any, kind: str, steps: int, reps: int) -> Dict[str, float]:
    """Median seconds per training step (upload batch, forward, loss, backward, optimizer
    step, loss.item())."""
    step, batch_bytes = _step_fn(lib, kind)
    for i in range(3):
        step(i)
    per = []
    waits0 = _client_waits(lib)
    for _ in range(reps):
        t0 = time.perf_counter()
        for i in range(steps):
            step(i)
        per.append((time.perf_counter() - t0) / steps)
    out: Dict[str, Any] = {"step_s": median(per), "batch_bytes": batch_bytes}
    if waits0 is not None:  # tensord: the client's blocking waits for the daemon, per step
        out["waits_per_step"] = (_client_waits(lib) - waits0) / (steps * reps)
    return out


def _client_waits(lib: Any) -> Any:
    """How many times the tensord client blocked waiting for the daemon so far (None: torch)."""
    if lib.__name__ != "tensord":
        return None
    return lib.default_session().waits


def worker(lib: Any, start_at: float, duration: float) -> Dict[str, float]:
    """One sharing client: MLP steps from ``start_at`` for ``duration`` s; steps/s."""
    step, _ = _step_fn(lib, "mlp")
    for i in range(2):
        step(i)
    while time.time() < start_at:
        time.sleep(0.001)
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < duration:
        step(n)
        n += 1
    return {"steps_per_s": n / (time.perf_counter() - t0)}


def run_bench(lib: Any, args: argparse.Namespace) -> Dict[str, Any]:
    if args.bench == "tiny":
        return tiny(lib, args.ops, args.reps)
    if args.bench == "sync":
        return sync_latency(lib, args.iters)
    if args.bench == "transfer":
        return transfer(lib, args.mib, args.reps)
    if args.bench == "train":
        return train(lib, args.model, args.steps, args.reps)
    if args.bench == "matmul":
        return matmul(lib, args.n, args.dtype, args.reps)
    return worker(lib, args.start_at, args.duration)


def phase_totals(prof: Any, client_s: float) -> Dict[str, Any]:
    """Seconds the daemon spent per phase over the profiled run, and the share of the client's
    wall time during which the daemon was running an op at all."""
    totals: Dict[str, float] = {}
    for a in prof.key_averages():
        for phase, us in a.phases_us.items():
            totals[phase] = totals.get(phase, 0.0) + us / 1e6
    busy = sum(e.wall_us for e in prof.events) / 1e6
    return {"ops": len(prof.events), "daemon_busy_s": busy, "client_wall_s": client_s,
            "daemon_busy_share": busy / client_s if client_s else 0.0,
            "phases_s": {k: round(v, 6) for k, v in sorted(totals.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", choices=["tensord", "torch"], required=True)
    ap.add_argument("--address", default=None)
    ap.add_argument("--bench", required=True,
                    choices=["tiny", "sync", "transfer", "train", "worker", "matmul"])
    ap.add_argument("--ops", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--model", choices=["mlp", "cnn", "resnet", "gpt"], default="mlp")
    ap.add_argument("--config", choices=["tiny", "gpt2-small"], default="tiny",
                    help="--model gpt: examples/python/gpt_lm.py's config")
    ap.add_argument("--autocast", choices=["bf16", "fp16"], default=None,
                    help="train: the forward and loss under td.autocast / torch.autocast")
    ap.add_argument("--device", default="cpu",
                    help="cpu or cuda (cuda:0); with --lib torch also tensord (the PyTorch device)")
    ap.add_argument("--optim", choices=["sgd", "adam"], default="sgd",
                    help="the training benchmarks' optimizer (SGD momentum 0.9, or Adam)")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--n", type=int, default=8192, help="matmul size")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--start_at", type=float, default=0.0)
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--bulk", choices=["auto", "off"], default="auto",
                    help="off: no bulk socket either (the gRPC stream carries every byte)")
    ap.add_argument("--shm", choices=["auto", "off"], default="auto",
                    help="same-host shared-memory transfer (off: the stream carries the bytes)")
    ap.add_argument("--profile", action="store_true",
                    help="tensord: run the benchmark under td.profiler (its figures then include "
                         "the profiler's cost) and print where the daemon's time went: the "
                         "per-op phase table on stderr, phase totals in the JSON")
    args = ap.parse_args()
    global OPTIM, GPT_CONFIG, AUTOCAST
    OPTIM, GPT_CONFIG, AUTOCAST = args.optim, args.config, args.autocast
    if args.lib == "torch":
        import torch as lib
        lib.set_num_threads(args.threads)
        if args.device == "tensord":
            import tensord.torch
            tensord.torch.connect(args.address)
    else:
        import tensord as lib
        lib.connect(args.address, **({"shm": False} if args.shm == "off" else {}),
                    **({"bulk": False} if args.bulk == "off" else {}))
    use_device(lib, args.device)
    if args.profile and args.lib == "tensord":
        t0 = time.perf_counter()
        with lib.profiler.profile() as prof:
            out = run_bench(lib, args)
        out["profile"] = phase_totals(prof, time.perf_counter() - t0)
        print(prof.key_averages().table(row_limit=12), file=sys.stderr)
        if any(e.nodes for e in prof.events):
            print(prof.backward_nodes().table(row_limit=12), file=sys.stderr)
    else:
        out = run_bench(lib, args)
    if args.device == "tensord":  # ops the daemon lacked, run on the client's CPU instead
        out["fallbacks"] = tensord.torch.fallback_counts()
    print(json.dumps(out), flush=True)
    if args.lib == "tensord":
        lib.close()


if __name__ == "__main__":
    main()
