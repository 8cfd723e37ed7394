"""The PyTorch MNIST example's shape (pytorch/examples mnist/main.py) on synthetic data.

    .venv-torch/bin/python examples/torch/mnist_cnn.py                      # local PyTorch
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/mnist_cnn.py --device tensord

A two-convolution CNN on 1x28x28 images from a DataLoader over a TensorDataset (shuffled by a
seeded generator), log_softmax + nll_loss, Adadelta, StepLR, and a test loop under no_grad that
sums the loss and counts correct predictions. Only the device line and the import differ from
a CPU program. (No dropout: the daemon draws its masks from its own generator, so a run with
dropout could not match a CPU run step for step.)
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batches", type=int, default=4, help="training batches per epoch")
parser.add_argument("--batch-size", type=int, default=16)
args = parser.parse_args()
if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 12 * 12, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def fake_mnist(n: int, seed: int) -> TensorDataset:
    """n images in [0, 1] whose label is the brightest of ten horizontal bands (learnable)."""
    g = torch.Generator().manual_seed(seed)
    images = torch.rand(n, 1, 28, 28, generator=g) * 0.5
    labels = torch.randint(0, 10, (n,), generator=g)
    for i, label in enumerate(labels.tolist()):
        images[i, 0, 2 * label + 4:2 * label + 6] += 0.5
    return TensorDataset((images - 0.1307) / 0.3081, labels)


def train(model: nn.Module, loader: DataLoader, opt: torch.optim.Optimizer, epoch: int) -> None:
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        opt.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        opt.step()
        print(f"epoch {epoch} batch {batch_idx} loss {loss.item():.6f}")


def test(model: nn.Module, loader: DataLoader) -> None:
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = len(loader.dataset)
    print(f"test loss {test_loss / n:.6f} correct {correct} of {n}")


torch.manual_seed(1)
model = Net().to(device)
train_loader = DataLoader(fake_mnist(args.batches * args.batch_size, 2),
                          batch_size=args.batch_size, shuffle=True,
                          generator=torch.Generator().manual_seed(3))
test_loader = DataLoader(fake_mnist(64, 4), batch_size=32)
opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
for epoch in range(1, args.epochs + 1):
    train(model, train_loader, opt, epoch)
    test(model, test_loader)
    scheduler.step()
    print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.6f}")
