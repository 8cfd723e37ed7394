"""Small models in the usual PyTorch idiom: the same losses on the tensord device as local
PyTorch from the same weights (rtol 1e-4 per step), with no op on the CPU fallback."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")
F = pytest.importorskip("torch.nn.functional")

D = "tensord"


def _cnn() -> "nn.Module":
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(6, 8, 3, stride=2), nn.ReLU(),
                         nn.Flatten(), nn.Linear(8 * 2 * 2, 10))


class _TinyAttention(nn.Module):
    """Token embedding, LayerNorm, one causal self-attention head with a tril mask buffer,
    GELU MLP, weight-tied output: a GPT's parts."""

    def __init__(self, vocab: int = 40, dim: int = 16, block: int = 8) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.ln = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight
        self.register_buffer("mask", torch.tril(torch.ones(block, block)))

    def forward(self, idx: "torch.Tensor") -> "torch.Tensor":
        t = idx.shape[1]
        h = self.emb(idx) + self.pos(torch.arange(t, device=idx.device))
        q, k, v = self.qkv(self.ln(h)).split(h.shape[-1], dim=-1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / h.shape[-1] ** 0.5)
        att = att.masked_fill(self.mask[:t, :t] == 0, float("-inf")).softmax(dim=-1)
        h = h + att @ v
        h = h + self.mlp(self.ln(h))
        return self.head(h)


def _train_cnn(model: "nn.Module", device: str) -> list:
    model = model.to(device)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.7)
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(8, 1, 12, 12, generator=g), torch.randint(0, 10, (8,), generator=g)
    losses, correct = [], 0
    for _ in range(4):
        xb, yb = x.to(device), y.to(device)
        opt.zero_grad()
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        correct += (out.argmax(dim=1) == yb).sum().item()
    return losses + [correct]


def _train_attention(model: "nn.Module", device: str) -> list:
    model = model.to(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=3e-3)
    g = torch.Generator().manual_seed(3)
    data = torch.randint(0, 40, (4, 9), generator=g)
    losses = []
    for step in range(4):
        for group in opt.param_groups:
            group["lr"] = 3e-3 * (0.5 + 0.5 * (1 - step / 4))
        x, y = data[:, :-1].to(device), data[:, 1:].to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        losses.append(F.cross_entropy(model(x).view(-1, 40), y.reshape(-1)).item())
    return losses


@pytest.mark.parametrize("make,train", [(_cnn, _train_cnn), (_TinyAttention, _train_attention)],
                         ids=["cnn-adadelta-steplr", "attention-adamw-groups-clip"])
def test_model_trains_like_local_pytorch(td: object, make: object, train: object) -> None:
    model = make()
    ref = train(copy.deepcopy(model), "cpu")
    got = train(model, D)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)


class _LSTMLM(nn.Module):
    def __init__(self, vocab: int = 30, dim: int = 12) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, x: "torch.Tensor", state: object) -> object:
        h, state = self.lstm(self.emb(x), state)
        return self.out(h), state


def _train_lstm(model: "nn.Module", device: str) -> list:
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(4)
    data = torch.randint(0, 30, (3, 2, 7), generator=g)
    state, losses = None, []
    for batch in data:
        x, y = batch[:, :-1].to(device), batch[:, 1:].to(device)
        if state is not None:
            state = tuple(s.detach() for s in state)  # truncated BPTT
        logits, state = model(x, state)
        loss = F.cross_entropy(logits.reshape(-1, 30), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        losses.append(loss.item())
    return losses


def _transformer() -> "nn.Module":
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    return nn.ModuleDict({"emb": nn.Embedding(20, 16),
                          "enc": nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                          "out": nn.Linear(16, 20)})


def _train_transformer(model: "nn.Module", device: str) -> list:
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(5)
    data = torch.randint(0, 20, (2, 9), generator=g)
    mask = nn.Transformer.generate_square_subsequent_mask(8).to(device)
    losses = []
    for _ in range(3):
        x, y = data[:, :-1].to(device), data[:, 1:].to(device)
        h = model["enc"](model["emb"](x), mask=mask, is_causal=True)
        loss = F.cross_entropy(model["out"](h).reshape(-1, 20), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _gan() -> "nn.Module":
    torch.manual_seed(0)
    gen = nn.Sequential(nn.ConvTranspose2d(8, 4, 4, 2, 1, bias=False), nn.BatchNorm2d(4),
                        nn.ReLU(), nn.ConvTranspose2d(4, 1, 4, 2, 1), nn.Tanh())
    disc = nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1), nn.LeakyReLU(0.2), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 1), nn.Sigmoid())
    return nn.ModuleDict({"g": gen, "d": disc})


def _train_gan(model: "nn.Module", device: str) -> list:
    model = model.to(device)
    gen, disc = model["g"], model["d"]
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    crit = nn.BCELoss()
    g = torch.Generator().manual_seed(6)
    real = torch.randn(4, 1, 12, 12, generator=g).tanh().to(device)
    losses = []
    for _ in range(3):
        noise = torch.randn(4, 8, 3, 3, generator=g).to(device)
        fake = gen(noise)
        ones, zeros = torch.ones(4, 1, device=device), torch.zeros(4, 1, device=device)
        opt_d.zero_grad()
        loss_d = crit(disc(real), ones) + crit(disc(fake.detach()), zeros)
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = crit(disc(fake), ones)
        loss_g.backward()
        opt_g.step()
        losses += [loss_d.item(), loss_g.item()]
    return losses


@pytest.mark.parametrize("make,train", [(_LSTMLM, _train_lstm),
                                        (_transformer, _train_transformer),
                                        (_gan, _train_gan)],
                         ids=["lstm-2layer-detached", "transformer-encoder-causal",
                              "dcgan-convtranspose-bce-two-adams"])
def test_sequence_and_gan_models_train_like_local_pytorch(td: object, make: object,
                                                          train: object) -> None:
    model = make()
    ref = train(copy.deepcopy(model), "cpu")
    got = train(model, D)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
