"""The PyTorch VAE example's shape (pytorch/examples vae/main.py) on synthetic data.

    .venv-torch/bin/python examples/torch/vae.py                      # local PyTorch
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/vae.py --device tensord

An encoder to a mean and log-variance, the reparameterisation trick with ``randn_like``, a
sigmoid decoder, binary_cross_entropy (summed) plus the KL term, Adam, and a test loop under
no_grad. Only the device line and the import differ from a CPU program.

The noise: ``randn_like`` on the tensord device draws from the daemon's generator, which is not
PyTorch's CPU stream, so ``reparameterize`` draws ``eps`` on the CPU and moves it to the
device, as a program does when it wants the same noise on every device. ``--device-noise``
draws it on the device instead (the daemon's generator: other noise, so other losses).
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batches", type=int, default=4)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--device-noise", action="store_true")
args = parser.parse_args()
if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line


class VAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(784, 200)
        self.fc21 = nn.Linear(200, 10)
        self.fc22 = nn.Linear(200, 10)
        self.fc3 = nn.Linear(10, 200)
        self.fc4 = nn.Linear(200, 784)

    def encode(self, x: torch.Tensor) -> tuple:
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
        std = torch.exp(0.5 * logvar)
        if args.device_noise:
            eps = torch.randn_like(std)
        else:
            eps = torch.randn_like(std, device="cpu").to(std.device)
        return mu + eps * std

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x: torch.Tensor) -> tuple:
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x: torch.Tensor, x: torch.Tensor, mu: torch.Tensor,
                  logvar: torch.Tensor) -> torch.Tensor:
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def images(n: int, seed: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.rand(n, 1, 28, 28, generator=g), torch.zeros(n))


torch.manual_seed(1)
model = VAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
train_loader = DataLoader(images(args.batches * args.batch_size, 2), batch_size=args.batch_size,
                          shuffle=True, generator=torch.Generator().manual_seed(3))
test_loader = DataLoader(images(32, 4), batch_size=16)
torch.manual_seed(5)  # the noise
for epoch in range(1, args.epochs + 1):
    model.train()
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} batch {batch_idx} loss {loss.item() / len(data):.6f}")
    model.eval()
    test_loss = 0.0
    with torch.no_grad():
        for data, _ in test_loader:
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
    print(f"epoch {epoch} test loss {test_loss / len(test_loader.dataset):.6f}")
