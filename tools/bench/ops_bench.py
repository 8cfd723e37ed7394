#!/usr/bin/python3
"""CPU op benchmark: tensord kernel time vs local PyTorch, in one run on one machine.

Starts its own daemon (bazel-bin/server/tensord --listen=127.0.0.1:0 --insecure), uploads the
operands once, and times a loop of N ops closed by ``td.synchronize()`` (the daemon runs ops
in order, so the loop's wall time over N is the per-op kernel time plus a small per-op command
overhead). PyTorch runs the same loop in this process. Prints one line per op with the ratio
tensord / PyTorch (lower is better).

The training rows (layer_norm, cross_entropy, gelu: "fwd+bwd") time a forward and its
backward at a transformer's shapes (64 x 128 tokens); tensord's ``backward`` is one command and
a synchronize, PyTorch's runs in this process; both accumulate into the leaves' ``.grad``.

ops_bench_hot.py adds issue 25's hot ops: causal SDPA, group_norm, embedding's backward, cumsum,
topk, sort, conv_transpose2d and index_put, at the shapes of the models that use them.

Usage: /usr/bin/python3 tools/bench/ops_bench.py [--threads N] [--repeat K] [--only SUBSTR,...]
(the reference is whichever torch the interpreter imports: .venv-torch/bin/python for PyPI's)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "client", "python"))

import torch  # noqa: E402

import tensord as td  # noqa: E402
from ops_bench_hot import hot_op_cases  # noqa: E402


def start_daemon(threads: int) -> tuple:
    binary = os.environ.get("TENSORD_BINARY", os.path.join(REPO, "bazel-bin", "server", "tensord"))
    port_file = os.path.join(tempfile.mkdtemp(prefix="ops-bench-"), "port")
    env = dict(os.environ, TENSORD_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    proc = subprocess.Popen([binary, "--listen=127.0.0.1:0", "--insecure",
                             f"--port_file={port_file}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1500):
        if os.path.exists(port_file) and open(port_file).read().strip():
            return proc, "127.0.0.1:" + open(port_file).read().strip()
        time.sleep(0.02)
    proc.kill()
    raise SystemExit(f"{binary} did not start (build it with `bazel build //server:tensord`)")


def best_of(fn, n: int, repeat: int) -> float:
    """Seconds per call: the best of `repeat` loops of n calls."""
    fn()  # warm up (allocator caches, OpenBLAS buffers)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(n)
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def fwd_bwd(fn, inputs: list, grad_out) -> None:
    """One forward through fn and its backward from grad_out (or from a scalar)."""
    out = fn(*inputs)
    out.backward(grad_out) if grad_out is not None else out.backward()


def training_cases(g: "torch.Generator") -> list:
    """Forward + backward rows at training shapes: 64 x 128 tokens, width 768 (GPT-2 small),
    the MLP's 4x hidden for gelu, 1000 classes for the loss."""
    rows, width = 64 * 128, 768
    x = torch.randn(rows, width, generator=g)
    w, b = torch.randn(width, generator=g), torch.randn(width, generator=g)
    h = torch.randn(rows, 4 * width, generator=g)
    logits = torch.randn(rows, 1000, generator=g)
    target = torch.randint(0, 1000, (rows,), generator=g)
    gx, gh = torch.randn(rows, width, generator=g), torch.randn(rows, 4 * width, generator=g)
    T, D = torch.nn.functional, td.nn.functional

    def leaves(*ts: torch.Tensor) -> tuple:
        pt = [t.clone().requires_grad_(t.is_floating_point()) for t in ts]
        tt = [td.tensor(t.numpy(), requires_grad=t.is_floating_point()) for t in ts]
        return pt, tt

    (px, pw, pb), (tx, tw, tb) = leaves(x, w, b)
    (pl, pt), (tl, tt) = leaves(logits, target)
    (ph,), (th,) = leaves(h)
    tgx, tgh = td.tensor(gx.numpy()), td.tensor(gh.numpy())
    shape = (width,)
    ln = ("layer_norm [8192, 768] fwd+bwd", 5,
          lambda: fwd_bwd(T.layer_norm, [px, shape, pw, pb], gx),
          lambda: fwd_bwd(D.layer_norm, [tx, shape, tw, tb], tgx))
    ce = ("cross_entropy [8192, 1000] fwd+bwd", 5,
          lambda: fwd_bwd(T.cross_entropy, [pl, pt], None),
          lambda: fwd_bwd(D.cross_entropy, [tl, tt], None))
    ce_ls = ("cross_entropy ls=0.1 [8192, 1000] fwd+bwd", 5,
             lambda: fwd_bwd(lambda a, t: T.cross_entropy(a, t, label_smoothing=0.1), [pl, pt],
                             None),
             lambda: fwd_bwd(lambda a, t: D.cross_entropy(a, t, label_smoothing=0.1), [tl, tt],
                             None))
    cases = [ln, ce, ce_ls]
    # Attention's shapes (GPT tiny: batch 8, 4 heads, 64 tokens; Note [CPU softmax]).
    (ps,), (ts,) = leaves(torch.randn(8, 4, 64, 64, generator=g))
    gs = torch.randn(8, 4, 64, 64, generator=g)
    tgs = td.tensor(gs.numpy())
    for name in ("softmax", "log_softmax"):
        cases.append((f"{name} [8, 4, 64, 64] dim=-1 fwd+bwd", 20,
                      lambda f=getattr(T, name): fwd_bwd(lambda t: f(t, -1), [ps], gs),
                      lambda f=getattr(D, name): fwd_bwd(lambda t: f(t, -1), [ts], tgs)))
    for approx in ("none", "tanh"):
        cases.append((f"gelu {approx} [8192, 3072] fwd+bwd", 3,
                      lambda a=approx: fwd_bwd(lambda t: T.gelu(t, approximate=a), [ph], gh),
                      lambda a=approx: fwd_bwd(lambda t: D.gelu(t, approximate=a), [th], tgh)))
    return cases


def attention_bmm_cases(g: "torch.Generator") -> list:
    """bmm at attention's shapes (32 = batch 8 x 4 heads, 64 tokens, head dims 16 and 32),
    plain and with both operands transposed views (the backward's q k^T forms)."""
    cases = []
    for m, k, n in ((64, 16, 64), (64, 64, 16), (64, 32, 64), (64, 64, 32)):
        a, b = torch.randn(32, m, k, generator=g), torch.randn(32, k, n, generator=g)
        at, bt = a.transpose(1, 2).contiguous(), b.transpose(1, 2).contiguous()
        ta, tb, tat, tbt = (td.tensor(t.numpy()) for t in (a, b, at, bt))
        cases.append((f"bmm [32, {m}, {k}] x [32, {k}, {n}]", 50,
                       lambda a=a, b=b: torch.bmm(a, b), lambda a=ta, b=tb: td.matmul(a, b)))
        cases.append((f"bmm [32, {m}, {k}] x [32, {k}, {n}], both .mT", 50,
                      lambda a=at, b=bt: torch.bmm(a.mT, b.mT),
                      lambda a=tat, b=tbt: td.matmul(a.mT, b.mT)))
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated substrings of op names to run")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    proc, address = start_daemon(args.threads)
    try:
        td.connect(address)
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
        x, w = torch.randn(32, 64, 56, 56, generator=g), torch.randn(64, 64, 3, 3, generator=g)
        u, v = torch.randn(1 << 24, generator=g), torch.randn(1 << 24, generator=g)
        s = torch.randn(4096, 1024, generator=g)
        s4 = torch.randn(8, 4, 64, 64, generator=g)
        ta, tb, tx, tw, tu, tv, ts, ts4 = (td.tensor(t.numpy())
                                           for t in (a, b, x, w, u, v, s, s4))
        F = torch.nn.functional
        conv = td.CatalogFunction("conv2d")
        softmax = td.CatalogFunction("softmax")
        cases = [
            ("matmul 1024x1024", 10, lambda: torch.matmul(a, b), lambda: td.matmul(ta, tb)),
            ("conv2d 32x64x56x56, 64->64, 3x3", 2, lambda: F.conv2d(x, w, padding=1),
             lambda: conv(tx, tw, padding=1)),
            ("add 16M float32", 10, lambda: torch.add(u, v), lambda: td.add(tu, tv)),
            ("sum 16M float32", 10, lambda: torch.sum(u), lambda: td.sum(tu)),
            ("softmax [4096, 1024] dim=-1", 10, lambda: torch.softmax(s, -1),
             lambda: softmax(ts, dim=-1)),
            ("softmax [8, 4, 64, 64] dim=-1", 50, lambda: torch.softmax(s4, -1),
             lambda: softmax(ts4, dim=-1)),
        ] + attention_bmm_cases(g) + training_cases(g) + hot_op_cases(g)
        if args.only:
            keys = args.only.split(",")
            cases = [c for c in cases if any(k in c[0] for k in keys)]
        print(f"tensord ops_bench: {args.threads} threads, best of {args.repeat}; "
              f"torch {torch.__version__}")
        print(f"{'op':50s} {'torch ms':>10s} {'tensord ms':>11s} {'ratio':>7s}")
        for name, n, torch_fn, td_fn in cases:
            def run_torch(k: int = 1) -> None:
                for _ in range(k):
                    torch_fn()

            def run_td(k: int = 1) -> None:
                outs = [td_fn() for _ in range(k)]
                td.synchronize()
                del outs

            t_torch = best_of(run_torch, n, args.repeat)
            t_td = best_of(run_td, n, args.repeat)
            print(f"{name:50s} {t_torch * 1e3:10.2f} {t_td * 1e3:11.2f} {t_td / t_torch:7.2f}")
        td.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
