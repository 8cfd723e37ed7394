"""A tiny GPT in the usual PyTorch idiom; `--device tensord` runs it on a tensord daemon.

    .venv-torch/bin/python examples/torch/tiny_gpt.py                      # local PyTorch
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/tiny_gpt.py --device tensord

Token and position embeddings, causal self-attention (F.scaled_dot_product_attention, or with
``--attention mask`` by hand with a ``tril`` mask buffer and ``masked_fill``), a GELU MLP, LayerNorm, weight tying, AdamW with weight-decay groups, a hand-set cosine learning rate,
clip_grad_norm_, an eval loop under no_grad, and sampling with topk/softmax/multinomial/cat.
Only the device line and the import differ from a CPU program. (On the daemon, multinomial
draws from the session's generator, not PyTorch's stream: the sample may differ from a CPU run.)
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--attention", choices=["sdpa", "mask"], default="sdpa")
args = parser.parse_args()
if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line

text = "the quick brown fox jumps over the lazy dog. " * 20
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V, T, C, H = len(chars), 16, 32, 2


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))
        self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (z.view(b, t, H, C // H).transpose(1, 2) for z in (q, k, v))
        if args.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.Sequential(Block(), Block())
        self.ln = nn.LayerNorm(C)
        self.head = nn.Linear(C, V, bias=False)
        self.head.weight = self.tok.weight  # weight tying
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:  # GPT-2's: N(0, 0.02), zero biases
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(pos))))


def batch(g: torch.Generator) -> tuple:
    ix = torch.randint(len(data) - T - 1, (8,), generator=g)
    x = torch.stack([data[i:i + T] for i in ix])
    y = torch.stack([data[i + 1:i + T + 1] for i in ix])
    return x.to(device), y.to(device)


torch.manual_seed(0)
model = GPT().to(device)
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                         {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
g = torch.Generator().manual_seed(1)
for step in range(args.steps):
    lr = 3e-3 * 0.5 * (1 + math.cos(math.pi * step / args.steps))
    for group in opt.param_groups:
        group["lr"] = lr
    x, y = batch(g)
    loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 10 == 0 or step == args.steps - 1:
        model.eval()
        losses = torch.zeros(4)
        with torch.no_grad():
            for k in range(4):
                x, y = batch(g)
                losses[k] = F.cross_entropy(model(x).view(-1, V), y.view(-1)).item()
        model.train()
        print(f"step {step:3d}  train {loss.item():.6f}  eval {losses.mean():.6f}")

idx = torch.tensor([[stoi["t"]]], device=device)
with torch.no_grad():
    for _ in range(20):
        logits = model(idx[:, -T:])[:, -1, :]
        v, _ = torch.topk(logits, 5)
        logits[logits < v[:, [-1]]] = -float("inf")
        nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=None)
        idx = torch.cat([idx, nxt], dim=1)
print("sample:", "".join(chars[i] for i in idx[0].tolist()))
