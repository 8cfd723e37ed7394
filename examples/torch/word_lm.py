"""The PyTorch word-level language model example's shape (pytorch/examples
word_language_model): a 2-layer LSTM or an nn.TransformerEncoder, on a synthetic corpus.

    .venv-torch/bin/python examples/torch/word_lm.py --model LSTM          # local PyTorch
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/word_lm.py --model Transformer --device tensord

The corpus is batchified into columns and read in bptt-long chunks; the LSTM's hidden state is
detached between chunks (truncated backpropagation through time); the Transformer's causal
mask is ``nn.Transformer.generate_square_subsequent_mask``. Training is the example's plain
SGD by hand (``clip_grad_norm_`` then ``p.data.add_(p.grad, alpha=-lr)``), the learning rate
is annealed when the validation loss stops improving, and evaluation runs under no_grad. Only
the device line and the import differ from a CPU program. (Dropout is 0 by default: the daemon
draws its masks from its own generator, so a run with dropout could not match a CPU run.)
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--model", choices=["LSTM", "Transformer"], default="LSTM")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--bptt", type=int, default=8)
parser.add_argument("--dropout", type=float, default=0.0)
args = parser.parse_args()
if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line


class RNNModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int,
                 dropout: float) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, input: torch.Tensor, hidden: tuple) -> tuple:
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output))
        return F.log_softmax(decoded.view(-1, decoded.size(-1)), dim=1), hidden

    def init_hidden(self, bsz: int) -> tuple:
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float, max_len: int = 512) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int,
                 dropout: float) -> None:
        super().__init__()
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers,
                                                         enable_nested_tensor=False)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.decoder = nn.Linear(ninp, ntoken)
        self.ninp = ninp
        nn.init.uniform_(self.input_emb.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(len(src), device=src.device)
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        output = self.decoder(self.transformer_encoder(src, mask, is_causal=True))
        return F.log_softmax(output, dim=-1)


def corpus(n: int, ntokens: int, seed: int) -> torch.Tensor:
    """A token stream with structure to learn: each token tends to follow its predecessor + 1."""
    g = torch.Generator().manual_seed(seed)
    noise = torch.randint(0, ntokens, (n,), generator=g)
    keep = torch.rand(n, generator=g) < 0.7
    return torch.where(keep, torch.arange(n) % ntokens, noise)


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous().to(device)


def get_batch(source: torch.Tensor, i: int) -> tuple:
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def repackage_hidden(h: object) -> object:
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


ntokens, batch_size, eval_batch_size = 50, 4, 2
train_data = batchify(corpus(4 * 25, ntokens, 1), batch_size)
val_data = batchify(corpus(2 * 17, ntokens, 2), eval_batch_size)
torch.manual_seed(3)
if args.model == "LSTM":
    model = RNNModel(ntokens, 16, 16, 2, args.dropout).to(device)
else:
    model = TransformerModel(ntokens, 16, 2, 32, 2, args.dropout).to(device)
criterion = nn.NLLLoss()


def evaluate(data_source: torch.Tensor) -> float:
    model.eval()
    total_loss = 0.0
    if args.model == "LSTM":
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            if args.model == "Transformer":
                output = model(data).view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


lr, best_val_loss = 5.0, None
for epoch in range(1, args.epochs + 1):
    model.train()
    if args.model == "LSTM":
        hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        if args.model == "Transformer":
            output = model(data).view(-1, ntokens)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        print(f"epoch {epoch} batch {batch} loss {loss.item():.6f}")
    val_loss = evaluate(val_data)
    print(f"epoch {epoch} valid loss {val_loss:.6f} ppl {math.exp(val_loss):.4f}")
    if best_val_loss is None or val_loss < best_val_loss:
        best_val_loss = val_loss
    else:
        lr /= 4.0
