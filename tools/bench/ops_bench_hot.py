"""ops_bench rows for the hot ops of issue 25: attention, normalisations, embedding backward,
scans, selection, conv_transpose2d and index_put, at the shapes of the models that use them.

Each case is (name, loop length, torch fn, tensord fn), as ops_bench's own rows; the
"fwd+bwd" rows accumulate into leaves' ``.grad`` on both sides.
"""

from __future__ import annotations

import torch

import tensord as td


def _fwd_bwd(fn, inputs: list, grad_out) -> None:
    out = fn(*inputs)
    out.backward(grad_out)


def _leaves(*ts: torch.Tensor) -> tuple:
    """The same values as PyTorch leaves and tensord leaves (floating ones require grad)."""
    pt = [t.clone().requires_grad_(t.is_floating_point()) for t in ts]
    tt = [td.tensor(t.numpy(), requires_grad=t.is_floating_point()) for t in ts]
    return pt, tt


def _const(t: torch.Tensor):
    return td.tensor(t.numpy())


def attention_cases(g: torch.Generator) -> list:
    """Causal SDPA at GPT-2 small's head shape: batch 8, 12 heads, 128 tokens, head dim 64."""
    T, D = torch.nn.functional, td.nn.functional
    shape = (8, 12, 128, 64)
    q, k, v, go = (torch.randn(*shape, generator=g) for _ in range(4))
    (pq, pk, pv), (tq, tk, tv) = _leaves(q, k, v)
    cq, ck, cv, tgo = (_const(t) for t in (q, k, v, go))
    name = "sdpa causal [8, 12, 128, 64]"
    return [
        (name, 5, lambda: T.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda: D.scaled_dot_product_attention(cq, ck, cv, is_causal=True)),
        (name + " fwd+bwd", 3,
         lambda: _fwd_bwd(lambda a, b, c: T.scaled_dot_product_attention(a, b, c, is_causal=True),
                          [pq, pk, pv], go),
         lambda: _fwd_bwd(lambda a, b, c: D.scaled_dot_product_attention(a, b, c, is_causal=True),
                          [tq, tk, tv], tgo)),
    ]


def norm_embedding_cases(g: torch.Generator) -> list:
    """group_norm at a ResNet-like shape; embedding's backward (the weight's scatter-add) at
    GPT-2's vocabulary and width with 64 x 128 tokens."""
    T, D = torch.nn.functional, td.nn.functional
    x = torch.randn(32, 64, 28, 28, generator=g)
    w, b = torch.randn(64, generator=g), torch.randn(64, generator=g)
    gx = torch.randn(32, 64, 28, 28, generator=g)
    (px, pw, pb), (tx, tw, tb) = _leaves(x, w, b)
    tgx = _const(gx)
    gn = ("group_norm [32, 64, 28, 28] g=8 fwd+bwd", 3,
          lambda: _fwd_bwd(lambda a, c, d: T.group_norm(a, 8, c, d), [px, pw, pb], gx),
          lambda: _fwd_bwd(lambda a, c, d: D.group_norm(a, 8, c, d), [tx, tw, tb], tgx))
    cases = [gn]
    tokens = torch.randint(0, 8192, (64, 128), generator=g)
    for vocab in (50257, 8192):
        weight = torch.randn(vocab, 768, generator=g) * 0.02
        (pw_,), (tw_,) = _leaves(weight)
        ptok, ttok = tokens.clone(), _const(tokens)
        ge = torch.randn(64, 128, 768, generator=g)
        tge = _const(ge)
        cases.append((f"embedding [{vocab}, 768] x [64, 128] fwd+bwd", 3,
                      lambda w_=pw_, t_=ptok, ge=ge: _fwd_bwd(T.embedding, [t_, w_], ge),
                      lambda w_=tw_, t_=ttok, ge=tge: _fwd_bwd(D.embedding, [t_, w_], ge)))
    return cases


def scan_select_cases(g: torch.Generator) -> list:
    """cumsum along both dims, topk (k=10) of rows and of one vocabulary-sized row, sort."""
    s = torch.randn(4096, 1024, generator=g)
    row = torch.randn(1, 50257, generator=g)
    ts, trow = _const(s), _const(row)
    return [
        ("cumsum [4096, 1024] dim=-1", 10, lambda: torch.cumsum(s, -1),
         lambda: td.cumsum(ts, dim=-1)),
        ("cumsum [4096, 1024] dim=0", 10, lambda: torch.cumsum(s, 0),
         lambda: td.cumsum(ts, dim=0)),
        ("topk [4096, 1024] k=10", 10, lambda: torch.topk(s, 10), lambda: td.topk(ts, 10)),
        ("topk [1, 50257] k=10", 50, lambda: torch.topk(row, 10), lambda: td.topk(trow, 10)),
        ("sort [4096, 1024] dim=-1", 3, lambda: torch.sort(s, -1), lambda: td.sort(ts, dim=-1)),
    ]


def conv_transpose_cases(g: torch.Generator) -> list:
    """DCGAN's generator step: N=64, 128 -> 64 channels, 16x16 -> 32x32, kernel 4 stride 2."""
    T, D = torch.nn.functional, td.nn.functional
    x = torch.randn(64, 128, 16, 16, generator=g)
    w = torch.randn(128, 64, 4, 4, generator=g) * 0.05
    go = torch.randn(64, 64, 32, 32, generator=g)
    (px, pw), (tx, tw) = _leaves(x, w)
    cx, cw, tgo = _const(x), _const(w), _const(go)
    name = "conv_transpose2d [64, 128, 16, 16] k4s2p1"
    return [
        (name, 3, lambda: T.conv_transpose2d(x, w, stride=2, padding=1),
         lambda: D.conv_transpose2d(cx, cw, stride=2, padding=1)),
        (name + " fwd+bwd", 2,
         lambda: _fwd_bwd(lambda a, b: T.conv_transpose2d(a, b, stride=2, padding=1), [px, pw],
                          go),
         lambda: _fwd_bwd(lambda a, b: D.conv_transpose2d(a, b, stride=2, padding=1), [tx, tw],
                          tgo)),
    ]


def index_put_cases(g: torch.Generator) -> list:
    """x[idx] = v and its accumulate form: 64K int64 rows into a [1M, 16] table (out of place on
    both sides, as the daemon's row is)."""
    x = torch.randn(1 << 20, 16, generator=g)
    idx = torch.randint(0, 1 << 20, (1 << 16,), generator=g)
    v = torch.randn(1 << 16, 16, generator=g)
    tx, tidx, tv = _const(x), _const(idx), _const(v)
    return [
        (f"index_put [1M, 16] [64K]{' accumulate' if acc else ''}", 10,
         lambda a=acc: torch.index_put(x, (idx,), v, accumulate=a),
         lambda a=acc: td.index_put(tx, tv, tidx, accumulate=a))
        for acc in (False, True)
    ]


def hot_op_cases(g: torch.Generator) -> list:
    return (attention_cases(g) + norm_embedding_cases(g) + scan_select_cases(g) +
            conv_transpose_cases(g) + index_put_cases(g))
