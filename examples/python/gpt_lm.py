#!/usr/bin/python3
"""A decoder-only GPT language model (GPT-2's layout) trained on synthetic tokens through
tensord.

    tools/start.sh                                   # or any running daemon
    PYTHONPATH=client/python /usr/bin/python3 examples/python/gpt_lm.py --steps 10
    ... examples/python/gpt_lm.py --config gpt2-small --device cuda:0 --autocast bf16

Token and position embeddings, pre-LayerNorm blocks (causal self-attention through
``F.scaled_dot_product_attention(is_causal=True)``, a 4x GELU MLP), a final LayerNorm and a
head tied to the token embedding, cross-entropy over the next tokens, AdamW with nanoGPT's
weight-decay groups (matrices and embeddings decay, biases and norms do not). Written once
over ``lib`` (``tensord`` or ``torch``) like the other examples, so tests train it in both
from the same weights (``copy_weights``) and ``tools/bench/py_bench.py --bench train --model
gpt`` times it in both.

Configs: ``tiny`` (4 layers, 4 heads, d=128, 64 tokens, vocab 512, batch 8: a CPU step of tens
of milliseconds) and ``gpt2-small`` (12 layers, 12 heads, d=768, 1024 tokens, vocab 50257,
batch 8: 124M parameters, for the GPU in bfloat16 autocast). No dropout (nanoGPT's default
for pretraining; random masks would also differ between the libraries).

Synthetic data: each sequence follows a fixed random successor table (a token's successor is
``successor[token]`` nine times in ten, else uniform), so the loss can go down.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import math
import time
from typing import Any, List, NamedTuple, Optional, Tuple

import numpy as np

from mnist_mlp import copy_weights  # noqa: F401 (re-exported: the tests use it)


class GPTConfig(NamedTuple):
    """A model's shape and its training batch."""

    vocab_size: int
    block_size: int  # tokens per sequence
    n_layer: int
    n_head: int
    n_embd: int
    batch_size: int


CONFIGS = {
    "tiny": GPTConfig(vocab_size=512, block_size=64, n_layer=4, n_head=4, n_embd=128,
                      batch_size=8),
    "gpt2-small": GPTConfig(vocab_size=50257, block_size=1024, n_layer=12, n_head=12,
                            n_embd=768, batch_size=8),
}
TINY = CONFIGS["tiny"]


def causal_attention(lib: Any, q: Any, k: Any, v: Any) -> Any:
    """``softmax(q k^T / sqrt(d) + causal mask) v`` over ``(B, H, T, d)``: the library's
    ``scaled_dot_product_attention``, or the formula where PyTorch has none (Debian's 1.13,
    the test oracle)."""
    sdpa = getattr(lib.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q, k, v, is_causal=True)
    t, d = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d))
    keep = lib.ones(t, t, dtype=lib.bool, device=q.device).tril()
    return scores.masked_fill(~keep, float("-inf")).softmax(-1) @ v


def build_model(lib: Any, config: GPTConfig = TINY) -> Any:
    """The GPT, in ``lib`` (``tensord`` or ``torch``), with GPT-2's initialisation."""
    nn = lib.nn
    F = nn.functional
    c = config
    head_dim = c.n_embd // c.n_head

    class CausalSelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd)
            self.c_proj = nn.Linear(c.n_embd, c.n_embd)

        def forward(self, x: Any, b: int, t: int) -> Any:
            # Sections, not split(n_embd): their count needs no shape, so tensord need not
            # wait for this fresh tensor's (Note [Attention without shape waits]).
            q, k, v = self.c_attn(x).split([c.n_embd] * 3, dim=2)
            q, k, v = (z.reshape(b, t, c.n_head, head_dim).transpose(1, 2) for z in (q, k, v))
            y = causal_attention(lib, q, k, v)
            return self.c_proj(y.transpose(1, 2).reshape(b, t, c.n_embd))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(c.n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(c.n_embd)
            self.mlp = nn.Sequential(nn.Linear(c.n_embd, 4 * c.n_embd),
                                     nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * c.n_embd, c.n_embd))

        def forward(self, x: Any, b: int, t: int) -> Any:
            x = x + self.attn(self.ln_1(x), b, t)
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(c.vocab_size, c.n_embd)
            self.wpe = nn.Embedding(c.block_size, c.n_embd)
            self.h = nn.ModuleList([Block() for _ in range(c.n_layer)])
            self.ln_f = nn.LayerNorm(c.n_embd)
            self.apply(self._init_weights)
            for block in self.h:  # GPT-2: residual projections scaled by 1/sqrt(2 n_layer)
                for proj in (block.attn.c_proj, block.mlp[2]):
                    nn.init.normal_(proj.weight, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layer))

        @staticmethod
        def _init_weights(m: Any) -> None:
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

        def forward(self, idx: Any) -> Any:
            # The shapes come from idx, an uploaded tensor: asking a computed tensord tensor
            # for its shape waits for the daemon's acknowledgement.
            b, t = idx.shape
            pos = lib.arange(t, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x, b, t)
            # The head shares the token embedding's weight (GPT-2's tying): F.linear with it,
            # so the tie survives .to() and state_dict has one copy.
            return F.linear(self.ln_f(x), self.wte.weight)

    return GPT()


def loss_fn(lib: Any, logits: Any, targets: Any) -> Any:
    """Mean cross-entropy of ``(B, T, V)`` logits against ``(B, T)`` next tokens."""
    return lib.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())


def synthetic_data(steps: int, batch_size: int, seed: int = 0, config: GPTConfig = TINY
                   ) -> List[Tuple[np.ndarray, np.ndarray]]:
    """``steps`` batches of (tokens [B, T] int64, next tokens [B, T] int64)."""
    rng = np.random.default_rng(seed)
    v, t = config.vocab_size, config.block_size
    successor = rng.integers(0, v, v)
    out = []
    for _ in range(steps):
        seq = np.empty((batch_size, t + 1), dtype=np.int64)
        seq[:, 0] = rng.integers(0, v, batch_size)
        for i in range(t):
            follow = rng.random(batch_size) < 0.9
            seq[:, i + 1] = np.where(follow, successor[seq[:, i]], rng.integers(0, v, batch_size))
        out.append((seq[:, :-1].copy(), seq[:, 1:].copy()))
    return out


def make_optimizer(lib: Any, model: Any, lr: float = 6e-4, fused: bool = False) -> Any:
    """AdamW as GPT-2 is trained (nanoGPT): betas (0.9, 0.95), weight decay 0.1 on the
    matrices and embeddings, none on biases and norms. ``fused``: PyTorch's fused CUDA step
    (where its AdamW has one: 2.0 and later)."""
    fused = fused and "fused" in inspect.signature(lib.optim.AdamW).parameters
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95), eps=1e-8,
                           **({"fused": True} if fused else {}))


def autocast(lib: Any, device: Any, dtype: Optional[str]) -> Any:
    """Mixed precision in ``dtype`` ("bf16"/"fp16") for the block, or none: ``td.autocast``,
    or ``torch.autocast`` for ``device``'s type."""
    if dtype is None:
        return contextlib.nullcontext()
    low = lib.bfloat16 if dtype == "bf16" else lib.float16
    if lib.__name__ == "tensord":
        return lib.autocast(low)
    return lib.autocast(device_type=str(device or "cpu").split(":")[0], dtype=low)


def train(lib: Any, model: Any, optimizer: Any, data: List[Tuple[np.ndarray, np.ndarray]],
          device: Any = None, amp: Optional[str] = None, log: bool = False) -> List[float]:
    """One step per batch (forward and loss under ``autocast(amp)``); the loss of each."""
    losses = []
    model.train()
    for step, (x, y) in enumerate(data):
        xs, ys = lib.tensor(x, device=device), lib.tensor(y, device=device)
        optimizer.zero_grad()
        with autocast(lib, device, amp):
            loss = loss_fn(lib, model(xs), ys)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if log:
            print(f"step {step:3d}  loss {losses[-1]:.4f}", flush=True)
    return losses


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--address", default=None, help="daemon address (default $TENSORD_ADDRESS)")
    p.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=None, help="default: the config's")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--device", default=None, help="e.g. cuda:0 (default: the daemon's)")
    p.add_argument("--autocast", choices=["bf16", "fp16"], default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    config = CONFIGS[args.config]

    import tensord as td
    with td.connect(args.address):
        if args.device:
            td.set_default_device(args.device)
        td.manual_seed(args.seed)
        model = build_model(td, config)
        n = sum(p.numel() for p in model.parameters())
        print(f"GPT {args.config}: {n / 1e6:.2f}M parameters", flush=True)
        opt = make_optimizer(td, model, args.lr)
        data = synthetic_data(args.steps, args.batch_size or config.batch_size, args.seed,
                              config)
        t0 = time.perf_counter()
        losses = train(td, model, opt, data, device=args.device, amp=args.autocast, log=True)
        dt = time.perf_counter() - t0
        print(f"{len(losses)} steps in {dt:.2f} s ({dt / max(len(losses), 1) * 1e3:.1f} "
              f"ms/step); loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
