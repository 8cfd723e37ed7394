"""An MLP trained in plain PyTorch; two lines make it run on a tensord daemon.

    .venv-torch/bin/python examples/torch/mlp.py                    # local PyTorch, CPU
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/mlp.py --device tensord

The program is written as any PyTorch program is; only the device line and the import of
``tensord.torch`` (which registers the ``tensord`` device) differ from its CPU version.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
args = parser.parse_args()

if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
if args.optimizer == "sgd":
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)
else:
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)

g = torch.Generator().manual_seed(1)
batches = [(torch.randn(64, 784, generator=g), torch.randint(0, 10, (64,), generator=g))
           for _ in range(4)]  # a tiny synthetic data set, seen again each epoch
for step in range(args.steps):
    x, y = (t.to(device) for t in batches[step % len(batches)])
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step:3d}  loss {loss.item():.6f}")
